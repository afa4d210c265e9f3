"""What a person does and sees in the chat, as small Playwright helpers for the e2e tests.

Every helper goes through the page the way a user would (type, click, read what is shown) and
waits with Playwright's auto-retrying ``expect``; none of them reaches into app state.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from tests.helpers import accounts
from tests.helpers.app_server import AppServer, SignedIn

THREAD_URL = re.compile(r".*/thread/[0-9a-f-]{36}$")
THINKING = "Thinking…"
"""The streaming bubble's placeholder before the first token (not reply text)."""
SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "shots"
"""Screenshots for people to look at (gitignored)."""


def sign_in_browser(page: Page, server: AppServer, *, role: str = "member", name: str = "") -> SignedIn:
    """Sign the page's browser (its context) in on ``server`` as an account of its own.

    The first call per context creates the account (``AppServer.sign_in`` with a fresh key: another
    context is another person), signs it in through ``POST /auth/sign-in`` and puts the session
    cookie in the context, as the sign-in form would. Later calls return the same account.
    """
    context = page.context
    signed = getattr(context, "_hitl_signed_in", None)
    if signed is None or signed[0] != server.url:
        who = server.sign_in(str(uuid.uuid4()), role=role, name=name)
        context.add_cookies([accounts.browser_cookie(server.url, who.token)])
        signed = context._hitl_signed_in = (server.url, who)  # type: ignore[attr-defined]
    return signed[1]


def open_new_thread(page: Page, server: AppServer) -> str:
    """Sign the browser in (``sign_in_browser``), open ``/`` (which redirects to a new thread),
    wait for the composer; return the thread URL."""
    sign_in_browser(page, server)
    page.goto(server.url + "/")
    page.wait_for_url(THREAD_URL)
    expect(page.get_by_test_id("composer-input")).to_be_enabled()
    return page.url


def send(page: Page, text: str) -> None:
    """Type ``text`` in the composer and press Send."""
    page.get_by_test_id("composer-input").fill(text)
    page.get_by_test_id("send-button").click()


def messages(page: Page, role: str) -> Locator:
    """The settled messages of ``role`` (user, assistant or tool), in thread order."""
    return page.locator(f"[data-testid=message][data-role={role}]")


def cards(page: Page) -> Locator:
    """The approval cards of the pending review, in request order."""
    return page.get_by_test_id("approval-card")


def card(page: Page, index: int) -> Locator:
    """The approval card at ``index`` (0-based, the request's order)."""
    return page.locator(f"[data-testid=approval-card][data-index='{index}']")


def wait_idle(page: Page) -> None:
    """Wait until no reply is streaming and the composer is usable again."""
    expect(page.get_by_test_id("streaming-message")).to_have_count(0)
    expect(page.get_by_test_id("composer-input")).to_be_enabled()


def reply_to(page: Page, text: str) -> str:
    """Send ``text``, wait for the run to finish, return the last assistant message's text."""
    users, before = messages(page, "user").count(), messages(page, "assistant").count()
    send(page, text)
    expect(messages(page, "user")).to_have_count(users + 1)
    wait_idle(page)
    assert messages(page, "assistant").count() > before, f"no reply to {text!r}"
    return messages(page, "assistant").last.inner_text()


def buttons_on(card_locator: Locator) -> list[str]:
    """The decision buttons a card offers, e.g. ``["approve", "edit", "reject"]``."""
    ids = card_locator.locator("[data-testid^=decision-]").evaluate_all("els => els.map(e => e.dataset.testid)")
    return [i.removeprefix("decision-") for i in ids]


def paste(locator: Locator, value: str) -> None:
    """Put ``value`` into a focused text field as a paste would (one input event, ignores maxlength).

    Used for the megabyte pastes: ``fill`` would type through the field's ``maxlength``. The field
    keeps the focus, so the next click elsewhere blurs it as it would for a person.
    """
    locator.evaluate(
        """(el, v) => {
            el.focus();
            const proto = el.tagName === 'TEXTAREA' ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
            Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, v);
            el.dispatchEvent(new Event('input', {bubbles: true}));
        }""",
        value,
    )


WATCH_STREAM_JS = """(thinking) => {
  if (window.__hitlStream) return;
  const seen = window.__hitlStream = {appeared: false, lengths: [], longest: ''};
  const read = () => {
    const b = document.querySelector('[data-testid=streaming-message]');
    if (!b) return;
    seen.appeared = true;
    let text = b.innerText;
    if (text.trim() === thinking) text = '';
    if (text && (!seen.lengths.length || seen.lengths[seen.lengths.length - 1] !== text.length)) seen.lengths.push(text.length);
    if (text.length > seen.longest.length) seen.longest = text;
  };
  seen.observer = new MutationObserver(read);
  seen.observer.observe(document.body, {childList: true, subtree: true, characterData: true});
  read();
}"""
"""Records, in the page, the streaming bubble's text length after every DOM change (an observer, not
a poll: a loaded machine may leave a poll from the test process too slow to see a short reply grow)."""


def watch_streaming(page: Page) -> None:
    """Start recording the streaming bubble's growth in ``page`` (``WATCH_STREAM_JS``); call it before
    the action that starts the stream. ``streamed_lengths`` reads what it recorded."""
    page.evaluate(WATCH_STREAM_JS, THINKING)


def streamed_lengths(page: Page, until_gone_s: float = 60.0) -> tuple[list[int], str]:
    """Wait for the streaming bubble to appear and then to disappear (``until_gone_s`` seconds at
    most each), as recorded in the page since ``watch_streaming`` (started here if it was not).

    Returns the distinct text lengths seen (in order) and the longest text seen.
    """
    watch_streaming(page)
    page.wait_for_function("() => window.__hitlStream.appeared", timeout=until_gone_s * 1000)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=streaming-message]')", timeout=until_gone_s * 1000
    )
    seen = page.evaluate(
        "() => { const s = window.__hitlStream; s.observer.disconnect(); window.__hitlStream = null;"
        " return {lengths: s.lengths, longest: s.longest}; }"
    )
    return list(seen["lengths"]), str(seen["longest"])


def normalize(text: str) -> str:
    """Collapse whitespace, so rendered markdown and streamed plain text compare equal."""
    return " ".join(text.split())


def open_workspace(page: Page) -> None:
    """Open the workspace panel (outbox, files, records)."""
    if page.get_by_test_id("workspace-panel").count() == 0:
        page.get_by_test_id("workspace-toggle").first.click()
    expect(page.get_by_test_id("workspace-panel")).to_be_visible()


def shoot(page: Page, name: str) -> Path:
    """Save a screenshot of the viewport as ``test-artifacts/shots/<name>.png``."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def own_sandbox(page: Page, server: AppServer) -> Path:
    """The files sandbox this page's account owns, ``<data>/files/<owner key>/`` (may not exist yet).

    The owner is the account id of the browser's sign-in (``sign_in_browser``).
    """
    from hitl_app.store.owners import owner_space

    owner = str(sign_in_browser(page, server).account_id)
    data = server.data_dir
    return owner_space(files_root=data / "files", demo_db_path=data / "demo_records.sqlite", owner=owner).files_dir


def edit_json(scope: Locator, text: str, *, synced: bool = True) -> None:
    """In the open card editor inside ``scope``: switch to the JSON editor (when the card offers a
    form) and replace its text as one paste would. The editor sends it 300 ms after typing pauses
    (or when it is left); with ``synced`` (the default) this waits until the server holds it (the
    editor's ``data-synced``), as a person sees the diff follow before clicking "Check edit": a
    click while the diff re-renders could otherwise land on a button that moves for one frame.

    Waits for the editor to be open first: "Edit" opens it after a round trip to the server, and
    the Form/JSON switch is only there once it is (looking for the switch sooner finds none and
    leaves the card in its form)."""
    expect(scope.get_by_test_id("card-editor")).to_be_visible()
    switch = scope.get_by_test_id("edit-mode-json")
    if switch.count():
        switch.click()
    content = scope.get_by_test_id("edit-json").locator(".cm-content")
    expect(content).to_be_visible()
    content.click()
    content.page.keyboard.press("Control+A")
    content.page.keyboard.insert_text(text)
    if synced:
        expect(scope.get_by_test_id("edit-json")).to_have_attribute("data-synced", "true")


def form_field(scope: Locator, path: str) -> Locator:
    """The input (text input, text area, select or checkbox) of the form field at ``path``."""
    field = scope.locator(f"[data-testid=edit-form-field][data-field='{path}']")
    return field.locator("input, textarea, select, button[role=checkbox]").first


def axe_problems(page: Page) -> list[str]:
    """Serious and critical axe-core violations on the page (``axe-playwright-python``, which ships
    axe-core: nothing is fetched), one line each: rule id, impact, the first offending element.

    Waits for the page's finite CSS animations to end first (a dialog fades in over 200 ms; axe
    measures colours with the opacity of the moment, so mid-fade text fails the contrast rule).
    """
    from axe_playwright_python.sync_playwright import Axe

    page.wait_for_function(
        "() => document.getAnimations().every(a => a.playState !== 'running'"
        " || !isFinite(a.effect.getComputedTiming().endTime))"
    )
    results = Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {v['nodes'][0]['target'] if v['nodes'] else '?'}"
        for v in results.response["violations"]
        if v.get("impact") in ("serious", "critical")
    ]


class AxeScan:
    """Scans pages and dialogs at rest with ``axe_problems`` and collects what it finds, by name and
    width (``<name>-desktop`` or ``<name>-phone``, from the page's viewport: under 600 px is the
    phone); ``assert_clean()`` at the end of a test fails with every one of them at once.

    Each scan's screenshot goes to ``test-artifacts/shots/axe-<name>-<width>.png``.
    """

    def __init__(self) -> None:
        self.found: dict[str, list[str]] = {}

    def __call__(self, page: Page, name: str, settle: Callable[[], object] | None = None) -> None:
        """Scan ``page`` once ``settle()`` (e.g. an ``expect`` that the dialog shows) returned."""
        if settle:
            settle()
        page.wait_for_load_state("networkidle")
        page.mouse.move(1, 1)  # the page at rest: a hovered link or button (the last click) has its hover colour
        width = "phone" if (page.viewport_size or {"width": 0})["width"] < 600 else "desktop"
        shoot(page, f"axe-{name}-{width}")
        if problems := axe_problems(page):
            self.found[f"{name}-{width}"] = problems

    def assert_clean(self) -> None:
        assert self.found == {}, "\n".join(f"{name}: {p}" for name, ps in self.found.items() for p in ps)


def shoot_at(page: Page, element: Locator, name: str) -> Path:
    """Scroll ``element``'s top into view and save the viewport as ``test-artifacts/shots/<name>.png``
    (an element screenshot of a card taller than the thread's scroll box would be clipped)."""
    element.evaluate("el => el.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(200)
    return shoot(page, name)


def shown_secret(page: Page, before: str = "") -> str:
    """The one-time secret (invite link, temporary password) the Accounts page shows in
    ``admin-secret``, once it is there and is not ``before`` (the previous one): it arrives in a
    script event of its own, after the message that announces it."""
    box = page.get_by_test_id("admin-secret")
    expect(box).not_to_have_text(re.compile(rf"^\s*(?:{re.escape(before)})?\s*$"))
    return box.inner_text().strip()
