// Countdowns of the review desk: fills every element with data-countdown-due (epoch ms, server
// clock) with the time left, counted from data-server-now (the server's clock when the page got
// it), so a wrong clock in the browser does not move a deadline. Text: data-countdown-before +
// time + data-countdown-after, or data-countdown-done once the time is up.
(function () {
  function fmt(ms) {
    var s = Math.max(0, Math.ceil(ms / 1000));
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    if (h) return h + " h " + String(m).padStart(2, "0") + " min";
    if (m) return m + ":" + String(r).padStart(2, "0") + " min";
    return r + " s";
  }
  function tick() {
    var nodes = document.querySelectorAll("[data-countdown-due]");
    for (var i = 0; i < nodes.length; i++) {
      var el = nodes[i];
      var due = +el.getAttribute("data-countdown-due"), srv = +el.getAttribute("data-server-now");
      if (el._hitlSrv !== srv) { el._hitlSrv = srv; el._hitlOffset = srv ? srv - Date.now() : 0; }
      var left = due - (Date.now() + el._hitlOffset);
      var text = left > 0
        ? (el.getAttribute("data-countdown-before") || "") + fmt(left) + (el.getAttribute("data-countdown-after") || "")
        : (el.getAttribute("data-countdown-done") || "time is up");
      if (el.textContent !== text) el.textContent = text;
      el.setAttribute("data-left-seconds", String(Math.max(0, Math.ceil(left / 1000))));
    }
  }
  window.setInterval(tick, 250);
})();
