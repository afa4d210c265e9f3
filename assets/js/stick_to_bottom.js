// window.hitlStickToBottom(): keep the thread (#thread-scroll) scrolled to its end while text
// streams in, unless the reader scrolled up; scroll a new review into view (its top first when it
// is taller than the screen), again as it fills in (its previews and chips arrive after its cards)
// until the reader acts (a tap, click, key or wheel); never move the page for changes inside the
// review after that (opening an editor), nor follow the end while the focus is in a card's editor.
// Scrolling is coalesced to one requestAnimationFrame per frame, and nothing reads layout per
// mutation. Safe to call again: a box is set up once. Called
// when the thread column mounts.
window.hitlStickToBottom = function () {
  const box = document.getElementById('thread-scroll');
  if (!box || box.__hitlStick) return;
  box.__hitlStick = true;
  let stick = true;
  const gap = () => box.scrollHeight - box.scrollTop - box.clientHeight;
  // At the end of the rows the tab holds while later rows are still on the server ("Show later
  // messages"), the reader is not at the thread's end: the later rows join below, where they read on,
  // rather than the page jumping past them to the end.
  const laterRows = () => !!box.querySelector('[data-testid=show-later]');
  box.addEventListener('scroll', () => { stick = gap() < 120 && !laterRows(); }, {passive: true});
  let panel = null;
  let reveal = null;
  let settling = null; // the new review, revealed again as it fills in, until the reader acts
  let frame = 0;
  const acted = () => { settling = null; };
  // The reader works in a card's editor (the focus is in it: a field, the JSON text, "Check edit"
  // once pressed): the page does not follow the end, so what the server draws below the inputs
  // (the diff) never moves the button under the pointer between its press and its release.
  const editing = () => {
    const a = document.activeElement;
    return !!(a && a.closest && a.closest('[data-testid=card-editor]'));
  };
  ['pointerdown', 'keydown', 'wheel', 'touchstart'].forEach((kind) => box.addEventListener(kind, acted, {passive: true}));
  // Layout is read and written here only, at most once per animation frame (the observer
  // itself never reads layout: a streamed delta no longer forces a layout of its own).
  const flush = () => {
    frame = 0;
    if (reveal) {
      const p = reveal;
      reveal = null;
      if (p.isConnected) { p.scrollIntoView({block: 'nearest'}); stick = gap() < 120; return; }
    }
    if (stick && gap() > 1 && !editing()) box.scrollTop = box.scrollHeight;
  };
  const schedule = () => { if (!frame) frame = requestAnimationFrame(flush); };
  const element = (r) => r.type === 'childList' && Array.prototype.some.call(r.addedNodes, (n) => n.nodeType === 1);
  new MutationObserver((records) => {
    // text appended to the live reply adds text nodes only: no review can have appeared
    const current = (!records.some(element) && (!panel || panel.isConnected)) ? panel
      : box.querySelector('[data-testid=review-panel]');
    if (current && current !== panel) {
      panel = current;
      reveal = current;
      settling = current;
      schedule();
      return;
    }
    panel = current;
    const inPanel = (n) => current && current.contains(n.nodeType === 1 ? n : n.parentNode);
    if (current && settling === current && records.some((r) => inPanel(r.target))) {
      reveal = current;
      schedule();
      return;
    }
    if (stick && !records.every((r) => inPanel(r.target))) schedule();
  }).observe(box, {childList: true, subtree: true, characterData: true});
  box.scrollTop = box.scrollHeight;
};

