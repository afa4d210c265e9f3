"""Sections 3, 4 and 6: the app in headless Chromium (Playwright, Debian's /usr/bin/chromium).

Method (all times are epoch milliseconds; the page uses ``performance.timeOrigin +
performance.now()``, the server's model trace uses ``time.time()``; same machine, same clock):

* An init script installs a MutationObserver on the whole document. After each batch of DOM
  mutations it counts the words in ``[data-testid=streaming-message]`` (the demo model's tokens
  are single words, so word k of the DOM text is token k) and stamps the first time the count
  reaches each k. The count is incremental: a batch that only appends text nodes adds the words
  of the new text; anything else inside the bubble recounts it (so the observer's own cost,
  which is inside the main-thread figure, does not grow with the reply). It also stamps the first appearance of an
  ``approval-card`` and of a new committed assistant ``message``, and (capture phase) every click on an element with a test id.
* Per-token lag = DOM time of word k - the time the model emitted token k, read from the model
  trace written in the server (bench/_inject/sitecustomize.py). "Page shows the whole reply" =
  first time N words are in the streaming bubble or the committed message has appeared.
* Main-thread time: CDP ``Performance.getMetrics`` TaskDuration (and ScriptDuration) difference
  between just before Send and the end of the reply, divided by the tokens. TaskDuration is wall
  time of the main thread's tasks, so it also counts time the thread waits (for the CPU on a loaded
  machine, for the compositor thread at commit); beside it the bench reports CPU time over the same
  window, which load inflates far less: the renderer's main thread (``/proc/<pid>/task/<pid>/stat``,
  the renderer's pid from CDP ``SystemInfo.getProcessInfo``) and the whole renderer process (all its
  threads: compositor, raster). The observer's own time (its callback, timed with
  ``performance.now()``) is reported too; it is inside all of these figures. Long tasks: a
  ``PerformanceObserver`` of type ``longtask`` (entries are tasks over 50 ms).
* Interrupt to card = the card's DOM time - the model's last chunk (the tool call) in the trace.
  Submit to first resumed token = first word of the resumed reply - the click on Approve all.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

from bench.common import read_traces, summary

INIT_JS = r"""
(() => {
  const now = () => performance.timeOrigin + performance.now();
  const B = (window.__bench = {
    words: [], cardAt: null, finalAt: null, clicks: {}, longtasks: [], assistants0: 0, msgsAt: null, msgTarget: -1,
    observerMs: 0,
  });
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) B.longtasks.push({ start: performance.timeOrigin + e.startTime, dur: e.duration });
    }).observe({ type: "longtask", buffered: true });
  } catch (e) {}
  document.addEventListener("click", (ev) => {
    const el = ev.target.closest && ev.target.closest("[data-testid]");
    if (el) B.clicks[el.dataset.testid] = now();
  }, true);
  B.reset = () => {
    B.words = []; B.cardAt = null; B.finalAt = null; B.observerMs = 0;
    B.assistants0 = document.querySelectorAll("[data-testid=message][data-role=assistant]").length;
  };
  // Word count of the streaming bubble, kept incrementally: a batch of mutations that only adds
  // text at the end (new text nodes, or appendData on one) adds the words of the new text
  // (O(new text)); any other change inside the bubble (an element added, a reset, a removal)
  // recounts it. W.seen: text node -> how many of its characters are counted.
  const words = (text) => { const m = text.match(/\S+/g); return m ? m.length : 0; };
  const W = { el: null, n: 0, inWord: false, seen: new WeakMap() };
  const recount = (s) => {
    const text = s.textContent || "";
    W.el = s; W.n = words(text); W.inWord = text.length > 0 && !/\s$/.test(text); W.seen = new WeakMap();
    const walk = document.createTreeWalker(s, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) W.seen.set(node, node.data.length);
  };
  const textOnly = (r) => r.type === "characterData" || (r.type === "childList" && r.removedNodes.length === 0
    && Array.prototype.every.call(r.addedNodes, (n) => n.nodeType === 3));
  const add = (node) => {
    const from = W.seen.get(node) || 0;
    if (node.data.length < from) return false;
    const text = node.data.slice(from);
    W.seen.set(node, node.data.length);
    if (!text) return true;
    W.n += words(text) - (W.inWord && !/^\s/.test(text) ? 1 : 0);
    W.inWord = !/\s$/.test(text);
    return true;
  };
  const scan = (records) => {
    const t = now();
    try { step(records, t); } finally { B.observerMs += now() - t; }
  };
  const step = (records, t) => {
    const elementAdded = records.some((r) => !textOnly(r));
    let s = W.el && W.el.isConnected ? W.el : null;
    if (!s || elementAdded) s = document.querySelector("[data-testid=streaming-message]");
    if (!s) {
      W.el = null;
    } else if (s !== W.el || records.some((r) => !textOnly(r) && s.contains(r.target))) {
      recount(s);
    } else {
      outer: for (const r of records) {
        if (!s.contains(r.target)) continue;
        for (const node of r.type === "characterData" ? [r.target] : r.addedNodes) {
          if (!add(node)) { recount(s); break outer; }
        }
      }
    }
    const n = s ? W.n : 0;
    while (B.words.length < n) B.words.push(t);
    if (!elementAdded) return;  // a card or a committed message adds elements
    if (B.cardAt === null && document.querySelector("[data-testid=approval-card] [data-testid^=decision-]")) B.cardAt = t;
    const assistants = () => document.querySelectorAll("[data-testid=message][data-role=assistant]").length;
    if (B.finalAt === null && assistants() > B.assistants0) B.finalAt = t;
    const messages = () => document.querySelectorAll("[data-testid=message]").length;
    if (B.msgTarget >= 0 && B.msgsAt === null && messages() >= B.msgTarget) B.msgsAt = t;
  };
  new MutationObserver(scan).observe(document, { subtree: true, childList: true, characterData: true });
})();
"""


FLOOR_HTML = r"""<!doctype html><html><body style="margin:0;font:16px sans-serif">
<div id="box" style="height:100vh;overflow-y:auto"><div style="max-width:800px;margin:0 auto;padding:16px">
<div data-testid="streaming-message" style="white-space:pre-wrap;overflow-wrap:anywhere"><div></div></div></div></div>
<script>
window.floorRun = (n, wps) => new Promise((done) => {
  const box = document.getElementById('box');
  const block = document.querySelector('[data-testid=streaming-message] > div');
  const node = block.appendChild(document.createTextNode(''));
  const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', 'iota', 'kappa'];
  let k = 0, frame = 0, current = node, len = 0;
  const t0 = performance.now();
  const step = () => {
    if (len > 1536) {  // settled blocks, as assets/js/live.js does
      const d = block.parentNode.appendChild(document.createElement('div'));
      current = d.appendChild(document.createTextNode('')); len = 0;
    }
    const w = (k ? ' ' : '') + words[k % words.length];
    current.appendData(w); len += w.length; k += 1;
    if (!frame) frame = requestAnimationFrame(() => { frame = 0; box.scrollTop = box.scrollHeight; });
    if (k >= n) { setTimeout(done, 100); return; }
    setTimeout(step, Math.max(0, t0 + k * 1000 / wps - performance.now()));
  };
  step();
});
</script></body></html>"""
"""Section 3's browser floor page (``BrowserBench.floor_page``)."""


def _metrics(cdp) -> dict[str, float]:
    return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}


_TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def _renderers_cpu(browser_cdp) -> dict[int, tuple[float, float]]:
    """CPU seconds so far of each renderer process: (whole process, per CDP ``SystemInfo.getProcessInfo``;
    its main thread, from ``/proc/<pid>/task/<pid>/stat`` utime + stime). A renderer that is gone is left out."""
    out = {}
    for p in browser_cdp.send("SystemInfo.getProcessInfo")["processInfo"]:
        if p["type"] != "renderer":
            continue
        try:
            fields = Path(f"/proc/{p['id']}/task/{p['id']}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[p["id"]] = (p["cpuTime"], (int(fields[11]) + int(fields[12])) * _TICK_S)
    return out


def _page_cpu(before: dict[int, tuple[float, float]], after: dict[int, tuple[float, float]]) -> tuple[float, float]:
    """(process, main thread) CPU seconds between two ``_renderers_cpu`` readings of the renderer that
    used the most (the measured page's; the browser runs one page at a time)."""
    deltas = [(a[0] - before.get(pid, (0.0, 0.0))[0], a[1] - before.get(pid, (0.0, 0.0))[1]) for pid, a in after.items()]
    return max(deltas, default=(0.0, 0.0))


# Scrolls the thread's box to its top (``scrollTop = 0``, as a fast wheel would) once per 150 ms until the
# first seeded message (``Question 0``) is in the DOM or ``limit`` seconds passed: the messages reached,
# the longest main-thread task and the tasks over 50 ms while scrolling, the DOM's size after.
SCROLL_JS = r"""async (limit) => {
  const box = document.getElementById('thread-scroll');
  const t0 = performance.now();
  const lt0 = window.__bench.longtasks.length;
  const first = () => !!Array.from(document.querySelectorAll('[data-testid=message]'))
      .find((m) => m.textContent.startsWith('Question 0:'));
  let steps = 0;
  while (!first() && performance.now() - t0 < limit * 1000) {
    box.scrollTop = 0;
    steps += 1;
    await new Promise((r) => setTimeout(r, 150));
  }
  const lts = window.__bench.longtasks.slice(lt0).filter((l) => l.start >= performance.timeOrigin + t0);
  return {reached_first: first(), ms: performance.now() - t0, steps,
          longest_task_ms: Math.max(0, ...lts.map((l) => l.dur)), long_tasks: lts.length,
          elements_after: document.getElementsByTagName('*').length,
          messages_after: document.querySelectorAll('[data-testid=message]').length};
}"""

class BrowserBench:
    """One Chromium and helpers to run the measured flows against ``base_url``."""

    def __init__(self, base_url: str, trace_dir: Path, share: BrowserBench | None = None):
        """``share``: another bench whose Playwright and Chromium this one uses (sync Playwright runs once
        per thread: a second ``sync_playwright().start()`` beside an open one raises "using Playwright Sync
        API inside the asyncio loop"); ``close`` then leaves them to their owner."""
        from playwright.sync_api import sync_playwright

        from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS

        self.base_url = base_url
        self.trace_dir = trace_dir
        self._owns = share is None
        if share is None:
            self._pw = sync_playwright().start()
            self.browser = self._pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            self._browser_cdp = self.browser.new_browser_cdp_session()
        else:
            self._pw, self.browser, self._browser_cdp = share._pw, share.browser, share._browser_cdp
        self.errors: list[str] = []

    def close(self) -> None:
        """Close the browser and Playwright (unless they are shared from another bench)."""
        if self._owns:
            self.browser.close()
            self._pw.stop()

    def signed_in_context(self):
        """A new browser context (1280x900) signed in as its own member account."""
        from tests.helpers import accounts
        from tests.helpers.app_server import SERVERS

        context = self.browser.new_context(viewport={"width": 1280, "height": 900})
        who = SERVERS[self.base_url.rstrip("/")].sign_in(str(uuid.uuid4()))
        context.add_cookies([accounts.browser_cookie(self.base_url, who.token)])
        return context

    def _page(self, thread_id: str | None = None):
        context = self.signed_in_context()
        context.add_init_script(INIT_JS)
        page = context.new_page()
        page.set_default_timeout(120_000)
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        page.on(
            "console",
            lambda m: self.errors.append(f"console: {m.text}")
            if m.type == "error" and "favicon" not in m.text and "Failed to load resource" not in m.text
            else None,
        )
        tid = thread_id or str(uuid.uuid4())
        page.goto(f"{self.base_url}/thread/{tid}")
        page.wait_for_function("() => window.__bench && document.querySelector('[data-testid=composer-input]')")
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        return context, page, cdp, tid

    @staticmethod
    def _send(page, text: str) -> None:
        page.wait_for_function("() => !document.querySelector('[data-testid=composer-input]').disabled")
        page.evaluate("() => window.__bench.reset()")
        page.get_by_test_id("composer-input").fill(text)
        page.get_by_test_id("send-button").click()

    def stream_reply(self, n_words: int) -> dict[str, Any]:
        """Send ``stream N words`` in a fresh tab; returns the reply's figures (ms unless named)."""
        context, page, cdp, tid = self._page()
        try:
            page.wait_for_timeout(300)
            before, cpu_before = _metrics(cdp), _renderers_cpu(self._browser_cdp)
            self._send(page, f"stream {n_words} words")
            page.wait_for_function(
                f"() => window.__bench.words.length >= {n_words} || window.__bench.finalAt !== null",
                timeout=n_words * 200 + 60_000
            )
            page.wait_for_function("() => window.__bench.finalAt !== null")
            page.wait_for_timeout(100)
            after, cpu_after = _metrics(cdp), _renderers_cpu(self._browser_cdp)
            b = page.evaluate(
                "() => ({words: window.__bench.words, finalAt: window.__bench.finalAt, clicks: window.__bench.clicks,"
                " longtasks: window.__bench.longtasks, observerMs: window.__bench.observerMs})"
            )
        finally:
            context.close()
        click = b["clicks"]["send-button"]
        words = b["words"]
        complete = words[n_words - 1] if len(words) >= n_words else b["finalAt"]
        traces = read_traces(self.trace_dir, tid)
        emitted = [t * 1000 for t in traces[-1]["t"]] if traces else []
        lags = [w - e for w, e in zip(words, emitted, strict=False)]  # a lost word shortens one side
        in_window = [lt for lt in b["longtasks"] if lt["start"] >= click - 1]
        task_s = after["TaskDuration"] - before["TaskDuration"]
        process_cpu_s, main_cpu_s = _page_cpu(cpu_before, cpu_after)
        return {
            "thread_id": tid,
            "send_to_complete_ms": complete - click,
            "send_to_first_token_ms": (words[0] - click) if words else None,
            "model_first_to_last_ms": (emitted[-1] - emitted[0]) if emitted else None,
            "words_seen_streaming": len(words),
            "last_emitted_to_complete_ms": (complete - emitted[-1]) if emitted else None,
            "lags_ms": lags,
            "task_s": task_s,
            "script_s": after["ScriptDuration"] - before["ScriptDuration"],
            "main_thread_ms_per_token": task_s * 1000 / n_words,
            "main_thread_cpu_ms_per_token": main_cpu_s * 1000 / n_words,
            "renderer_cpu_ms_per_token": process_cpu_s * 1000 / n_words,
            "observer_ms_per_token": b["observerMs"] / n_words,
            "longest_task_ms": max((lt["dur"] for lt in in_window), default=0.0),
            "long_tasks": len(in_window),
        }

    def floor_page(self, n_words: int, wps: float) -> dict[str, Any]:
        """The browser's own floor for section 3: a blank page (no app, no websocket) that shows one more
        word every ``1 / wps`` s, as the app's page does: appended (``appendData``) to a pre-wrap text
        block in a scroll box kept at its end once per animation frame, under the same bench observer.
        Returns the same main-thread / CPU figures per token as ``stream_reply``."""
        context = self.browser.new_context(viewport={"width": 1280, "height": 900})
        context.add_init_script(INIT_JS)
        page = context.new_page()
        page.set_default_timeout(n_words * 200 + 60_000)
        try:
            page.set_content(FLOOR_HTML)
            cdp = context.new_cdp_session(page)
            cdp.send("Performance.enable")
            page.wait_for_timeout(300)
            before, cpu_before = _metrics(cdp), _renderers_cpu(self._browser_cdp)
            page.evaluate("([n, wps]) => window.floorRun(n, wps)", [n_words, wps])
            after, cpu_after = _metrics(cdp), _renderers_cpu(self._browser_cdp)
            observer_ms = page.evaluate("() => window.__bench.observerMs")
            seen = page.evaluate("() => window.__bench.words.length")
        finally:
            context.close()
        process_cpu_s, main_cpu_s = _page_cpu(cpu_before, cpu_after)
        return {
            "words_seen": seen,
            "main_thread_ms_per_token": (after["TaskDuration"] - before["TaskDuration"]) * 1000 / n_words,
            "main_thread_cpu_ms_per_token": main_cpu_s * 1000 / n_words,
            "renderer_cpu_ms_per_token": process_cpu_s * 1000 / n_words,
            "observer_ms_per_token": observer_ms / n_words,
        }

    def review_flow(self) -> dict[str, Any]:
        """Send an email request: interrupt -> card, then Approve all (picks) and Submit -> first resumed token (ms)."""
        context, page, cdp, tid = self._page()
        try:
            self._send(page, "email alice@example.com about the report: it is ready")
            page.wait_for_function("() => window.__bench.cardAt !== null", timeout=30_000)
            b1 = page.evaluate("() => ({cardAt: window.__bench.cardAt, clicks: window.__bench.clicks})")
            page.wait_for_timeout(200)
            page.evaluate("() => window.__bench.reset()")
            page.get_by_test_id("approve-all").click()  # picks Approve (issue 23: it no longer submits)
            page.locator("[data-testid=submit-decisions]:not([disabled])").click()
            page.wait_for_function("() => window.__bench.words.length >= 1 || window.__bench.finalAt !== null", timeout=30_000)
            page.wait_for_function("() => window.__bench.finalAt !== null", timeout=60_000)
            b2 = page.evaluate(
                "() => ({words: window.__bench.words, finalAt: window.__bench.finalAt, clicks: window.__bench.clicks})"
            )
        finally:
            context.close()
        traces = read_traces(self.trace_dir, tid)
        tool_call_at = traces[0]["t_end"] * 1000 if traces else None
        first_resumed = b2["words"][0] if b2["words"] else b2["finalAt"]
        return {
            "thread_id": tid,
            "interrupt_to_card_ms": (b1["cardAt"] - tool_call_at) if tool_call_at else None,
            "send_to_card_ms": b1["cardAt"] - b1["clicks"]["send-button"],
            "submit_to_first_resumed_token_ms": first_resumed - b2["clicks"]["submit-decisions"],
        }

    def open_long_thread(self, thread_id: str, n_messages: int, scroll_s: float = 0.0) -> dict[str, Any]:
        """Navigate to a seeded thread in a fresh signed-in context; ms from navigation start until the
        card and the latest messages are in the DOM (since issue 23 the list is virtualized: it holds
        the rows near the screen, so "a message is in" is the mark, not a count; ``n_messages`` is only
        recorded), then the round trip of a click on the card's Reject, the longest main-thread task and
        the DOM's size, then the same for the thread opened again in that tab (``reopened_interactive_ms``: the
        browser has the build's files). With ``scroll_s`` > 0 the thread is then scrolled towards its first message for at
        most that many seconds (``SCROLL_JS``; its figures prefixed ``scroll_``)."""
        context = self.signed_in_context()
        context.add_init_script(INIT_JS + "\nwindow.__bench.msgTarget = 1;")
        page = context.new_page()
        page.set_default_timeout(120_000)
        try:
            page.goto(f"{self.base_url}/thread/{thread_id}")
            page.wait_for_function("() => window.__bench.cardAt !== null && window.__bench.msgsAt !== null")
            # interactive: a click on the card is handled (the choice shows) - a real round trip
            t_click = page.evaluate("() => performance.timeOrigin + performance.now()")
            page.get_by_test_id("decision-reject").first.click()
            page.locator("[data-testid=reject-message]").first.wait_for()
            t_ack = page.evaluate("() => performance.timeOrigin + performance.now()")
            b = page.evaluate(
                "() => ({cardAt: window.__bench.cardAt, msgsAt: window.__bench.msgsAt, origin: performance.timeOrigin,"
                " longtasks: window.__bench.longtasks, elements: document.getElementsByTagName('*').length,"
                " n: document.querySelectorAll('[data-testid=message]').length})"
            )
            # the same thread opened again in this tab: the browser keeps the build's files (http_headers.cache_control)
            page.goto(f"{self.base_url}/thread/{thread_id}")
            page.wait_for_function("() => window.__bench.cardAt !== null && window.__bench.msgsAt !== null")
            again = page.evaluate("() => Math.max(window.__bench.cardAt, window.__bench.msgsAt) - performance.timeOrigin")
            scrolled = page.evaluate(SCROLL_JS, scroll_s) if scroll_s > 0 else {}
        finally:
            context.close()
        return {
            "messages_in_dom": b["n"],
            "elements": b["elements"],
            "card_visible_ms": b["cardAt"] - b["origin"],
            "all_messages_ms": b["msgsAt"] - b["origin"],
            "interactive_ms": max(b["cardAt"], b["msgsAt"]) - b["origin"],
            "reopened_interactive_ms": again,
            "first_click_round_trip_ms": t_ack - t_click,
            "longest_task_ms": max((lt["dur"] for lt in b["longtasks"]), default=0.0),
            **{f"scroll_{k}": v for k, v in scrolled.items()},
        }


def lag_summary(lags: list[float]) -> dict[str, Any]:
    """Median/p95 of per-token lags (ms)."""
    return summary(lags)


def wait_idle(seconds: float = 0.5) -> None:
    """Let the server settle between runs."""
    time.sleep(seconds)
