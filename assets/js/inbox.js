// The review inbox in the page: the count in the tab title, and a browser notification for a new
// card while the tab is hidden. The server calls hitlInbox({count, cards}) after every read of the
// person's inbox (hitl_app/ui/state/inbox.py). Permission to notify is asked only from the
// "Enable notifications" button (hitlInboxAsk), never on load.
(function () {
  "use strict";
  var PREFIX = /^\(\d+\) /;
  var SEEN_KEY = "hitl_inbox_seen";
  var count = 0;
  var primed = false; // the first read of a page only marks the cards as seen

  function seen() {
    try {
      return new Set(JSON.parse(sessionStorage.getItem(SEEN_KEY) || "[]"));
    } catch (e) {
      return new Set();
    }
  }

  function remember(keys) {
    try {
      sessionStorage.setItem(SEEN_KEY, JSON.stringify(Array.from(keys).slice(-500)));
    } catch (e) { /* storage full or off: notifications may repeat */ }
  }

  function applyTitle() {
    var base = document.title.replace(PREFIX, "");
    var want = count > 0 ? "(" + count + ") " + base : base;
    if (document.title !== want) document.title = want;
  }

  // the router sets the page's own title on navigation: put the count back in front of it
  function watchTitle() {
    var observer = new MutationObserver(applyTitle);
    observer.observe(document.head, { subtree: true, childList: true, characterData: true });
  }

  function notify(card) {
    var n = new Notification("Review waiting: " + card.tool, {
      body: card.asked_by + " asked" + (card.args ? ": " + card.args : ""),
      tag: "hitl-review-" + card.key,
    });
    n.onclick = function () {
      window.focus();
      window.location.assign("/thread/" + encodeURIComponent(card.thread_id));
      n.close();
    };
  }

  window.hitlInbox = function (data) {
    count = Math.max(0, data.count | 0);
    applyTitle();
    var keys = seen();
    var cards = data.cards || [];
    var canNotify = primed && "Notification" in window && Notification.permission === "granted";
    for (var i = 0; i < cards.length; i++) {
      var card = cards[i];
      if (keys.has(card.key)) continue;
      keys.add(card.key);
      if (canNotify && document.visibilityState === "hidden") {
        try { notify(card); } catch (e) { /* e.g. a browser that only notifies from a service worker */ }
      }
    }
    primed = true;
    remember(keys);
  };

  window.hitlInboxPermission = function () {
    return "Notification" in window ? Notification.permission : "unsupported";
  };

  // called from the button's click: the only place permission is asked
  window.hitlInboxAsk = function () {
    if (!("Notification" in window)) return "unsupported";
    if (Notification.permission !== "default") return Notification.permission;
    return Notification.requestPermission();
  };

  if (document.head) watchTitle();
  else document.addEventListener("DOMContentLoaded", watchTitle);
})();
