// Keyboard shortcuts of the pending review (see hitl_app/ui/components/shortcuts.py).
// A approve, E edit, R reject (focus in the reason box), S respond (focus in the answer box),
// J/K next/previous card, Ctrl+Enter submit once every card is decided, Esc leaves a field or
// the editor (back to its card), ? lists the keys. Typing in a field never triggers a shortcut.
// The keys only click the buttons a mouse would click: every decision goes through the server.
//
// Keys act on the card that shows the focus. The script remembers that card (`here`), so a key
// pressed while the focus is elsewhere (on the "Keys" button after the list was closed, on the
// page after a re-render removed the focused element) acts on it and puts the focus back on it,
// never on whichever card happens to be first. After every decision key the focus is where the
// key says: on the card (A), in the field the card now shows (R, S, E). Keys typed before that
// field is on the page (a fast typist, a slow server) are kept and typed into it, so nothing
// typed is lost or read as a shortcut. The first undecided card of a newly shown review takes
// the focus.
(function () {
  const CARD = '[data-testid=approval-card]';
  const PANEL = '[data-testid=review-panel]';
  const HELP = '[data-testid=shortcuts-help]';
  const WAIT_FIELD_MS = 20000;
  // The decision keys come from Python (review/types.py DECISION_STYLES): the panel's
  // data-decision-keys lists them, each decision button carries its key (aria-keyshortcuts) and
  // the field its shortcut focuses (data-focus).
  const decisionKeys = () => {
    const panel = document.querySelector(PANEL);
    return panel ? panel.dataset.decisionKeys || '' : '';
  };

  const isField = (el) => !!el && el.nodeType === 1 && (el.isContentEditable
    || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName) || !!el.closest('.cm-editor'));
  const cards = () => Array.from(document.querySelectorAll(CARD));
  const cardOf = (el) => (el && el.nodeType === 1 ? el.closest(CARD) : null);
  const byIndex = (index) => (index === null ? null : document.querySelector(`${CARD}[data-index="${index}"]`));
  // A card this person still has to decide: theirs ("open") and nothing picked yet.
  const undecided = () => cards().find((c) => c.dataset.choice === '' && (c.dataset.standing || 'open') === 'open') || null;

  let here = null;        // data-index of the card the keys act on (the last one with the focus)
  let lost = null;        // [card index, element] that had the focus when it left a card
  let pending = null;     // a decision's field not shown yet: {index, selector, until}

  const current = () => cardOf(document.activeElement) || byIndex(here) || undecided() || cards()[0] || null;

  function focusCard(card) {
    if (!card) return;
    here = card.dataset.index;
    card.focus({ preventScroll: true });
    card.scrollIntoView({ block: 'nearest' });
  }

  let helpClosedAt = -1e9;  // when the list of keys was closed (its "Keys" button takes the focus soon after)
  const backToCard = () => focusCard(byIndex(here) || undecided() || cards()[0]);
  document.addEventListener('focusin', (e) => {
    const card = cardOf(e.target);
    if (card) here = card.dataset.index;
    lost = null;
    if (!card && e.target.closest && e.target.closest('[data-testid=shortcuts-button]')
        && performance.now() - helpClosedAt < 1500 && document.querySelector(PANEL)) {
      helpClosedAt = -1e9;
      requestAnimationFrame(backToCard);
    }
  }, true);
  document.addEventListener('focusout', (e) => {
    const card = cardOf(e.target);
    lost = card && !e.relatedTarget ? [card.dataset.index, e.target] : null;
  }, true);

  // Keys pressed while a decision's field is not on the page yet are queued, then played in order
  // once it is: letters typed into it (after R, "j" is text, as once the reason box has the
  // focus), Esc leaving it, the next shortcuts acting as usual.
  let queue = [];

  function playInField(el, k) {
    if (k.key === 'Escape') {
      el.blur();
      focusCard(cardOf(el));
    } else if (k.key === 'Enter' && k.ctrl) {
      submit();
    } else if (k.key === 'Backspace') {
      document.execCommand('delete');
    } else if (k.key.length === 1 && !k.ctrl) {
      if (!document.execCommand('insertText', false, k.key) && 'value' in el) {
        el.value += k.key;
        el.dispatchEvent(new Event('input', { bubbles: true }));
      }
    }
  }

  function drain() {
    while (queue.length && !pending) {
      const k = queue.shift();
      const target = document.activeElement;
      if (isField(target)) playInField(target, k); else command(k, target);
    }
  }

  // Each frame while a decision's field is awaited: focus it once the card shows it.
  function awaitField() {
    if (!pending) return;
    const card = byIndex(pending.index);
    const el = card && card.querySelector(pending.selector);
    if (el) {
      pending = null;
      el.focus();
      drain();
    } else if (!card || performance.now() > pending.until) {
      pending = null;
      queue = [];
      focusCard(card || current());
    } else {
      requestAnimationFrame(awaitField);
    }
  }

  function decide(key) {
    const card = current();
    if (!card) return false;
    const button = card.querySelector(`[data-testid^=decision-][aria-keyshortcuts="${key}"]`);
    if (!button || button.disabled) {
      focusCard(card); // a card that is not this person's to decide: show where the key went
      return false;
    }
    const field = button.dataset.focus;
    focusCard(card);
    button.click();
    if (field) {
      pending = { index: card.dataset.index, selector: field, until: performance.now() + WAIT_FIELD_MS };
      requestAnimationFrame(awaitField);
    }
    return true;
  }

  function move(step) {
    const all = cards();
    if (!all.length) return false;
    const from = cardOf(document.activeElement) || byIndex(here);
    const at = all.indexOf(from);
    if (at < 0) {
      focusCard(undecided() || all[0]);
    } else {
      focusCard(all[Math.min(all.length - 1, Math.max(0, at + step))]);
    }
    return true;
  }

  // Ctrl+Enter: leave the field first (its text is sent on blur), then submit once every card
  // is decided; if some card is not, the focus goes to it instead.
  function submit() {
    const field = isField(document.activeElement) ? document.activeElement : null;
    if (field) {
      field.blur();
      const card = cardOf(field);
      if (card) focusCard(card);
    }
    let tries = 0;
    const tick = () => {
      const panel = document.querySelector(PANEL);
      if (!panel) return;
      if (panel.dataset.allDecided === 'true') {
        const button = panel.querySelector('[data-testid=submit-decisions]');
        if (button) button.click();
      } else if (tries++ < 90) {
        requestAnimationFrame(tick);
      } else {
        focusCard(undecided() || current());
      }
    };
    tick();
    return true;
  }

  // One key (from the keyboard or the queue): true when it was a shortcut.
  function command(k, target) {
    if (k.key === 'Enter' && k.ctrl) return submit();
    if (k.key === 'Escape') {
      const card = cardOf(target);
      if (card && (isField(target) || target !== card)) {
        if (isField(target)) target.blur();
        focusCard(card);
      }
      return false;
    }
    if (k.ctrl || k.alt || isField(target)) return false;
    const key = k.key.length === 1 ? k.key.toLowerCase() : '';
    if (key === '?') {
      const open = document.querySelector('[data-testid=shortcuts-button]');
      if (open) { open.click(); return true; }
    } else if (key && /^[a-z]$/.test(key) && decisionKeys().includes(key)) {
      return decide(key);
    } else if (key === 'j' || key === 'k') {
      return move(key === 'j' ? 1 : -1);
    }
    return false;
  }

  document.addEventListener('keydown', (e) => {
    if (e.defaultPrevented || e.isComposing) return;
    const target = e.target;
    if (target && target.nodeType === 1 && target.closest('[role=dialog]')) return;
    if (!document.querySelector(PANEL)) return;
    const k = { key: e.key, ctrl: e.ctrlKey || e.metaKey, alt: e.altKey };
    if (pending && !isField(target)) {
      if ((k.key.length === 1 && !k.ctrl && !k.alt) || k.key === 'Escape' || k.key === 'Backspace' || (k.key === 'Enter' && k.ctrl)) {
        queue.push(k);
        e.preventDefault();
      }
      return;
    }
    if (command(k, target)) e.preventDefault();
  }, true);

  // After each change of the page: a newly shown review gives its first undecided card the focus
  // (unless a field outside the cards has it); a focused element the re-render removed, or the
  // closed list of keys, gives the focus back to the card the keys act on.
  let seen = '';
  let helpOpen = false;
  let queued = false;
  function check() {
    queued = false;
    const panel = document.querySelector(PANEL);
    const id = panel ? panel.dataset.interrupt || '' : '';
    const active = document.activeElement;
    const idle = !active || active === document.body || active === document.documentElement;
    const help = !!document.querySelector(HELP);
    const closedHelp = helpOpen && !help;
    helpOpen = help;
    if (id !== seen) {
      seen = id;
      here = null;
      lost = null;
      pending = null;
      queue = [];
      if (id && !(isField(active) && !active.disabled && !cardOf(active))) focusCard(undecided() || cards()[0]);
      return;
    }
    if (!id) return;
    if (closedHelp) {
      helpClosedAt = performance.now();
      if (idle || (active && active.closest('[data-testid=shortcuts-button]'))) backToCard();
    } else if (idle && lost && !lost[1].isConnected && !pending) {
      focusCard(byIndex(lost[0]));
      lost = null;
    }
  }
  function start() {
    new MutationObserver(() => { if (!queued) { queued = true; requestAnimationFrame(check); } })
      .observe(document.body, { childList: true, subtree: true });
    check();
  }
  if (document.body) start(); else document.addEventListener('DOMContentLoaded', start);
})();
