// Keyboard shortcuts of the pending review (see hitl_app/ui/components/shortcuts.py).
// A approve, E edit, R reject (focus in the reason box), S respond (focus in the answer box),
// J/K next/previous card, Ctrl+Enter submit once every card is decided, Esc leaves a field or
// the editor (back to its card), ? lists the keys. Typing in a field never triggers a shortcut.
// The keys only click the buttons a mouse would click: every decision goes through the server.
// The first undecided card of a newly shown review takes the focus.
(function () {
  const CARD = '[data-testid=approval-card]';
  const PANEL = '[data-testid=review-panel]';
  const BUTTON = { a: 'decision-approve', e: 'decision-edit', r: 'decision-reject', s: 'decision-respond' };
  const FIELD = { r: '[data-testid=reject-message]', s: '[data-testid=respond-message]',
    e: '[data-testid=card-editor] input, [data-testid=card-editor] select, [data-testid=card-editor] textarea, [data-testid=card-editor] .cm-content' };

  const isField = (el) => !!el && el.nodeType === 1 && (el.isContentEditable
    || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName) || !!el.closest('.cm-editor'));
  const cards = () => Array.from(document.querySelectorAll(CARD));
  const cardOf = (el) => (el && el.nodeType === 1 ? el.closest(CARD) : null);
  const undecided = () => cards().find((c) => c.dataset.choice === '') || null;
  const current = () => cardOf(document.activeElement) || undecided() || cards()[0] || null;

  function focusCard(card) {
    if (!card) return;
    card.focus({ preventScroll: true });
    card.scrollIntoView({ block: 'nearest' });
  }

  // Run then(el) once `selector` matches inside the card (the server adds the box after a click).
  function whenShown(card, selector, then) {
    const index = card.dataset.index;
    let tries = 0;
    const tick = () => {
      const live = document.querySelector(`${CARD}[data-index="${index}"]`);
      const el = live && live.querySelector(selector);
      if (el) then(el); else if (tries++ < 120) requestAnimationFrame(tick);
    };
    tick();
  }

  function decide(key) {
    const card = current();
    const button = card && card.querySelector(`[data-testid=${BUTTON[key]}]`);
    if (!button) return false;
    button.click();
    if (FIELD[key]) whenShown(card, FIELD[key], (el) => el.focus());
    return true;
  }

  function move(step) {
    const all = cards();
    if (!all.length) return false;
    const at = all.indexOf(cardOf(document.activeElement));
    const next = at < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + step));
    focusCard(all[next]);
    return true;
  }

  // Ctrl+Enter: leave the field first (its text is sent on blur), then submit once every card
  // is decided; if some card is not, the focus goes to it instead.
  function submit() {
    const field = isField(document.activeElement) ? document.activeElement : null;
    if (field) field.blur();
    let tries = 0;
    const tick = () => {
      const panel = document.querySelector(PANEL);
      if (!panel) return;
      if (panel.dataset.allDecided === 'true') {
        const button = panel.querySelector('[data-testid=submit-decisions]');
        if (button) button.click();
      } else if (tries++ < 45) {
        requestAnimationFrame(tick);
      } else {
        focusCard(undecided() || cardOf(field));
      }
    };
    tick();
    return true;
  }

  document.addEventListener('keydown', (e) => {
    if (e.defaultPrevented || e.isComposing) return;
    const target = e.target;
    if (target && target.nodeType === 1 && target.closest('[role=dialog]')) return;
    if (!document.querySelector(PANEL)) return;
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      if (submit()) e.preventDefault();
      return;
    }
    if (e.key === 'Escape') {
      const card = cardOf(target);
      if (card && (isField(target) || target !== card)) {
        if (isField(target)) target.blur();
        focusCard(card);
      }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey || isField(target)) return;
    const key = e.key.length === 1 ? e.key.toLowerCase() : '';
    let done = false;
    if (key === '?') {
      const open = document.querySelector('[data-testid=shortcuts-button]');
      if (open) { open.click(); done = true; }
    } else if (BUTTON[key]) {
      done = decide(key);
    } else if (key === 'j' || key === 'k') {
      done = move(key === 'j' ? 1 : -1);
    }
    if (done) e.preventDefault();
  }, true);

  // A newly shown review: its first undecided card takes the focus (unless a field has it).
  let seen = '';
  let queued = false;
  function check() {
    queued = false;
    const panel = document.querySelector(PANEL);
    const id = panel ? panel.dataset.interrupt || '' : '';
    if (id === seen) return;
    seen = id;
    if (!id || isField(document.activeElement)) return;
    focusCard(undecided() || cards()[0]);
  }
  function start() {
    new MutationObserver(() => { if (!queued) { queued = true; requestAnimationFrame(check); } })
      .observe(document.body, { childList: true, subtree: true });
    check();
  }
  if (document.body) start(); else document.addEventListener('DOMContentLoaded', start);
})();
