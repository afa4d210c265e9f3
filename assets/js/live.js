// window.hitlLive([key, seq, text(, 1 = reset)]): the streamed reply, append-only.
//
// Keeps each live bubble's text in a buffer keyed by ChatState.live_key and adds each delta to
// the element with data-live=<key> (React renders that element once, empty, and never re-renders
// the streamed text). A reset call replaces the buffer (a late joiner's snapshot, or a bubble's
// first delta); otherwise only the call numbered seq + 1 is applied, so a repeated or
// out-of-order call is ignored instead of duplicating text. If the element is not rendered yet
// (React commits a new bubble's key after the call may arrive), the paint waits for it on a
// MutationObserver, so the text shows in the same task that mounts the element (up to 3 s; it
// was a 15 ms retry timer, which held a resumed run's first words back). Eight bubbles are kept.
// Called by the server through rx.call_script (hitl_app/ui/state/live.py).
//
// Layout stays local: the text goes into block elements (<div>) of one text node each, grown
// with appendData. A block is settled, and the next delta starts a new one, once it holds
// SOFT_CHARS and ends a line, or HARD_CHARS and ends a word (a paragraph that long without a line
// break shows a line break there while it streams; the settled message is rendered as Markdown).
// The browser then lays out and paints only the last block per delta, not the whole reply.
//
// Inside a paragraph the live block is kept to its last few lines: once it holds LINE_CHARS
// more, its last rendered line (found with Range.getClientRects, one layout read per split) moves
// into a new block, so the earlier lines stay put and each delta repaints a few lines, not up to
// HARD_CHARS. The split is where the line already wraps, after a space, so nothing on screen moves
// and the text is unchanged; when no such point is found the block just grows (to HARD_CHARS).
(function () {
  var SOFT_CHARS = 512, HARD_CHARS = 1536, LINE_CHARS = 256;

  function newBlock(el, node) {
    var div = document.createElement('div');
    node = node || document.createTextNode('');
    div.appendChild(node);
    el.appendChild(div);
    return (el.__hitlBlock = {node: node, len: node.length, splitAt: node.length + LINE_CHARS});
  }

  // The offset where the text node's last rendered line starts, if the line before it ends with a
  // space there (a wrap the browser made); else -1.
  function lastLineStart(node) {
    var range = document.createRange(), n = node.length;
    var top = function (i) {
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      var rects = range.getClientRects();
      return rects.length ? rects[0].top : null;
    };
    var last = top(n - 1);
    if (last === null) return -1;
    var lo = 1, hi = n - 1;
    while (lo < hi) {
      var mid = (lo + hi) >> 1, t = top(mid);
      if (t !== null && t >= last - 1) hi = mid; else lo = mid + 1;
    }
    var before = top(lo - 1);
    return before !== null && before < last - 1 && /\s/.test(node.data.charAt(lo - 1)) ? lo : -1;
  }

  function splitLastLine(el, block) {
    var at = lastLineStart(block.node);
    if (at <= 0) {
      block.splitAt = block.len + LINE_CHARS / 4;
      return block;
    }
    return newBlock(el, block.node.splitText(at));
  }

  function settled(block, text) {
    var end = block.node.data.charAt(block.len - 1);
    if (block.len >= SOFT_CHARS && end === '\n') return true;
    return block.len >= HARD_CHARS && (/\s/.test(end) || /^\s/.test(text));
  }

  function put(el, text) {
    var block = el.__hitlBlock;
    if (!block || settled(block, text)) block = newBlock(el);
    else if (block.len >= block.splitAt) block = splitLastLine(el, block);
    block.node.appendData(text);
    block.len += text.length;
  }

  // key -> the latest paint waiting for the element [data-live=key]; one observer while any wait.
  var waiting = {}, observer = null;

  function wake() {
    for (var key in waiting) {
      if (document.querySelector('[data-live="' + key + '"]')) {
        var paint = waiting[key];
        delete waiting[key];
        paint();
      }
    }
    if (observer && Object.keys(waiting).length === 0) {
      observer.disconnect();
      observer = null;
    }
  }

  function whenRendered(key, paint) {
    waiting[key] = paint;  // a later call repaints the whole buffer: only the latest is kept
    if (!observer) {
      observer = new MutationObserver(wake);
      observer.observe(document.body, {childList: true, subtree: true});
    }
    setTimeout(function () {
      if (waiting[key] === paint) { delete waiting[key]; wake(); }
    }, 3000);
  }

  window.hitlLive = function (a) {
    var key = a[0], seq = a[1], text = a[2], reset = !!a[3];
    var B = window.__hitlLive || (window.__hitlLive = {order: []});
    var b = B[key];
    if (reset) {
      b = B[key] = {text: text, seq: seq};
      B.order.push(key);
      while (B.order.length > 8) delete B[B.order.shift()];
    } else if (b && seq === b.seq + 1) {
      b.text += text; b.seq = seq;
    } else {
      return;
    }
    var paint = function () {
      var el = b.el && b.el.isConnected ? b.el : document.querySelector('[data-live="' + key + '"]');
      if (!el) {
        whenRendered(key, paint);
        return;
      }
      b.el = el;
      if (!reset && el.__hitlLen === b.text.length - text.length) {
        if (text) put(el, text);
      } else {
        el.textContent = '';
        el.__hitlBlock = null;
        if (b.text) put(el, b.text);
      }
      el.__hitlLen = b.text.length;
    };
    paint();
  };
})();
