"""assets/js/live.js in Chromium, without the app: text that arrives before React mounts the
bubble's element shows as soon as the element is in the page, whole and once."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page

LIVE_JS = Path(__file__).resolve().parents[2] / "assets" / "js" / "live.js"

MOUNT_THEN_READ = """(key) => {
  const el = document.createElement("div");
  el.setAttribute("data-live", key);
  document.body.appendChild(el);
  // the observer's callback is a microtask queued by the append: read right after it
  return new Promise((resolve) => queueMicrotask(() => resolve(el.textContent)));
}"""


def _blank(page: Page) -> None:
    page.set_content("<!doctype html><html><body><main></main></body></html>")
    page.add_script_tag(path=str(LIVE_JS))


def test_text_sent_before_the_bubble_mounts_shows_when_it_mounts(page: Page) -> None:
    _blank(page)
    page.evaluate("""() => { hitlLive(["k1", 0, "Sent ", 1]); hitlLive(["k1", 1, "the "]); hitlLive(["k1", 2, "email."]); }""")
    assert page.evaluate(MOUNT_THEN_READ, "k1") == "Sent the email."
    page.evaluate("""() => hitlLive(["k1", 3, " Done."])""")
    assert page.evaluate("""() => document.querySelector('[data-live="k1"]').textContent""") == "Sent the email. Done."
    assert page.problems == []  # type: ignore[attr-defined]


def test_a_bubble_already_mounted_gets_each_delta_once(page: Page) -> None:
    _blank(page)
    page.evaluate("""() => {
      const el = document.createElement("div"); el.dataset.live = "k2"; document.body.appendChild(el);
      hitlLive(["k2", 0, "", 1]); hitlLive(["k2", 1, "a "]); hitlLive(["k2", 1, "a "]); hitlLive(["k2", 2, "b"]);
    }""")
    assert page.evaluate("""() => document.querySelector('[data-live="k2"]').textContent""") == "a b"
    assert page.problems == []  # type: ignore[attr-defined]
