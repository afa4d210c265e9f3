// window.hitlLive([key, seq, text(, 1 = reset)]): the streamed reply, append-only.
//
// Keeps each live bubble's text in a buffer keyed by ChatState.live_key and appends each delta
// as a text node to the element with data-live=<key> (React renders that element once, empty,
// and never re-renders the streamed text). A reset call replaces the buffer (a late joiner's
// snapshot, or a bubble's first delta); otherwise only the call numbered seq + 1 is applied, so a
// repeated or out-of-order call is ignored instead of duplicating text. If the element is not
// rendered yet it retries every 15 ms (up to 3 s) and then paints the whole buffer. Eight
// bubbles are kept. Called by the server through rx.call_script (hitl_app/ui/state/live.py).
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
  var tries = 0;
  var paint = function () {
    var el = document.querySelector('[data-live="' + key + '"]');
    if (!el) {
      if (++tries < 200) setTimeout(paint, 15);
      return;
    }
    if (!reset && el.__hitlLen === b.text.length - text.length) {
      el.appendChild(document.createTextNode(text));
    } else {
      el.textContent = b.text;
    }
    el.__hitlLen = b.text.length;
  };
  paint();
};
