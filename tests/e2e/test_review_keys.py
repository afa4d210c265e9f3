"""A whole review done by keyboard alone, as a new user does it, at a person's pace and at machine speed (issue 23).

Under ``examples/policies/team.toml`` a member asks for five calls in one message: a mail to approve,
a file write to edit, a mail to reject with a reason, a question to answer, and a delete only a
reviewer may decide. The member opens the list of keys first (``?``, then Esc), as a new user does,
and decides her four cards with A, J, E, R, S, typing, Tab/Enter on "Check edit", Esc and Ctrl+Enter;
the reviewer then decides the fifth with A and Ctrl+Enter. No click on a card.

The issue's own case comes first: three mails, A, J, A, J, R, a reason and Ctrl+Enter, with where
the focus is after every key read from ``document.activeElement``.

Before the fix, the "?" list returned the focus to its "Keys" button: A then acted on the first
undecided card and J started again from the first card, so A, J, A, J, R left the second card
rejected and the third undecided (issue 23); and the letters typed right after R, before the
reason box was on the page, were lost or read as shortcuts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import watched_page
from tests.e2e.ui import card, cards, messages, open_new_thread, own_sandbox, send, sign_in_browser, wait_idle
from tests.helpers.app_server import AppServer

TEAM = Path(__file__).resolve().parents[2] / "examples" / "policies" / "team.toml"
BATCH = (
    "email alice@example.com about plans: soon and write notes/phone.md: hello and "
    "email bob@example.com about lunch: at noon and ask me which colour? and delete notes/old.txt"
)
REASON = "keep it, bob is away"  # k, e, j, a, s and r typed here are text, never shortcuts


@pytest.fixture(scope="module")
def team_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    server = AppServer(tmp_path_factory.mktemp("e2e-keys"), env={"HITL_POLICY": str(TEAM)})
    server.start()
    yield server
    server.stop()


@pytest.fixture
def people(browser: Browser, team_server: AppServer) -> Iterator[tuple[Page, Page]]:
    """A member (Mia) and a reviewer (Rex), each in a browser of their own; fails on browser problems."""
    pages = []
    for role, name in (("member", "Mia Member"), ("reviewer", "Rex Reviewer")):
        page = watched_page(browser.new_context(viewport={"width": 1280, "height": 800}))
        sign_in_browser(page, team_server, role=role, name=name)
        pages.append(page)
    yield pages[0], pages[1]
    problems = [p for page in pages for p in getattr(page, "problems", [])]
    for page in pages:
        page.context.close()
    assert not problems, f"browser problems: {problems}"


@pytest.fixture
def member(browser: Browser, team_server: AppServer) -> Iterator[Page]:
    """A member (Mia) alone, in a browser of her own; fails on browser problems."""
    page = watched_page(browser.new_context(viewport={"width": 1280, "height": 800}))
    sign_in_browser(page, team_server, role="member", name="Mia Member")
    yield page
    problems = list(getattr(page, "problems", []))
    page.context.close()
    assert not problems, f"browser problems: {problems}"


class Keys:
    """Key presses with ``pause_ms`` between them (0: machine speed) and typing at ``type_ms`` a key."""

    def __init__(self, page: Page, pause_ms: int, type_ms: int):
        self.page, self.pause_ms, self.type_ms = page, pause_ms, type_ms

    def press(self, *keys: str) -> None:
        for key in keys:
            self.page.keyboard.press(key)
            if self.pause_ms:
                self.page.wait_for_timeout(self.pause_ms)  # a person's pace between keys (not a wait for the app)

    def type(self, text: str) -> None:
        self.page.keyboard.type(text, delay=self.type_ms)


def _focused_testid(page: Page) -> str:
    return page.evaluate("() => document.activeElement?.dataset?.testid || ''")


FOCUS = """() => {
    const el = document.activeElement;
    const card = el && el.closest ? el.closest('[data-testid=approval-card]') : null;
    return {card: card ? Number(card.dataset.index) : null, testid: (el && el.dataset && el.dataset.testid) || '',
            tag: el ? el.tagName : ''};
}"""
# Where the focus is as each key arrives (window, capture phase: before the page's own key handling),
# i.e. where the key before it left the focus, whatever the pace.
RECORD_FOCUS = """() => {
    window.focusAtKey = [];
    window.addEventListener('keydown', (e) => {
        const el = document.activeElement;
        const card = el && el.closest ? el.closest('[data-testid=approval-card]') : null;
        window.focusAtKey.push({key: e.key, card: card ? Number(card.dataset.index) : null,
                                testid: (el && el.dataset && el.dataset.testid) || '', tag: el ? el.tagName : ''});
    }, true);
}"""
THREE_MAILS = (
    "email alice@example.com about plans: soon and email bob@example.com about lunch: at noon and "
    "email carol@example.com about tea: at four"
)


def _focus(page: Page) -> dict:
    """What ``document.activeElement`` is now: the index of the card it is in (None: outside every
    card) and its test id; its tag too when it is a field."""
    now = page.evaluate(FOCUS)
    if now["tag"] not in ("INPUT", "TEXTAREA", "SELECT"):
        del now["tag"]
    return now


@pytest.mark.parametrize("pace", ["person", "machine"])
def test_a_j_a_j_r_on_three_cards_decides_each_and_ctrl_enter_submits(member: Page, team_server: AppServer, pace: str):
    """Issue 23's case: A, J, A, J, R, a reason, Ctrl+Enter on three mails approves the first two,
    rejects the third with the reason and submits; the focus stays on the card after each A (whose
    grant select then appears), J moves it to the next card, R puts it in the reason box."""
    person = pace == "person"
    keys = Keys(member, 450, 70) if person else Keys(member, 0, 0)
    open_new_thread(member, team_server)
    send(member, THREE_MAILS)
    expect(cards(member)).to_have_count(3)
    expect(card(member, 0)).to_be_focused()  # the first undecided card takes the focus
    member.evaluate(RECORD_FOCUS)
    reason = card(member, 2).get_by_test_id("reject-message")

    if person:  # a person looks after each key: the focus is checked once the key's effect shows
        for index in (0, 1):
            keys.press("a")
            expect(card(member, index)).to_have_attribute("data-choice", "approve")
            expect(card(member, index).get_by_test_id("grant-scope")).to_be_visible()
            assert _focus(member) == {"card": index, "testid": "approval-card"}, "after A, its grant select shown"
            keys.press("j")
            assert _focus(member) == {"card": index + 1, "testid": "approval-card"}, "after J"
        keys.press("r")
        expect(card(member, 2)).to_have_attribute("data-choice", "reject")
        expect(reason).to_be_focused()
        assert _focus(member) == {"card": 2, "testid": "reject-message", "tag": "INPUT"}, "after R"
        keys.type(REASON)
        expect(reason).to_have_value(REASON)
        assert [card(member, i).get_attribute("data-choice") for i in range(3)] == ["approve", "approve", "reject"]
    else:  # machine speed: every key at once, the reason typed before its box is on the page
        keys.press("a", "j", "a", "j", "r")
        keys.type(REASON)
    keys.press("Control+Enter")

    at_key = member.evaluate("() => window.focusAtKey")
    assert [(k["key"], k["card"]) for k in at_key[:5]] == [("a", 0), ("j", 0), ("a", 1), ("j", 1), ("r", 2)], at_key
    assert all(k["testid"] == "approval-card" for k in at_key[:5]), at_key  # on the card itself, not a select or the page
    if person:  # after R every letter went to the reason box
        assert {(k["card"], k["testid"]) for k in at_key[5:]} == {(2, "reject-message")}, at_key

    # submitted: the review is gone and each call ran or was rejected as decided
    expect(member.get_by_test_id("review-panel")).to_have_count(0)
    wait_idle(member)
    tools = messages(member, "tool")
    expect(tools).to_have_count(3)
    assert [t.get_attribute("data-outcome") for t in tools.all()] == ["executed", "executed", "rejected"]
    expect(tools.nth(0)).to_contain_text("alice@example.com")
    expect(tools.nth(1)).to_contain_text("bob@example.com")
    expect(tools.nth(2)).to_contain_text(REASON)


def _member_decides_by_keyboard(page: Page, keys: Keys) -> None:
    """Mia's four cards by keyboard: approve, edit the path, reject with a reason, answer; the delete waits."""
    expect(cards(page)).to_have_count(5)
    expect(card(page, 0)).to_be_focused()  # the first undecided card takes the focus
    expect(card(page, 3).get_by_test_id("card-description")).to_have_text("Question for you: which colour?")
    expect(card(page, 3).get_by_test_id("card-arg")).to_have_count(0)  # QA C3: the question once, not twice
    keys.press("?")
    expect(page.get_by_test_id("shortcuts-help")).to_be_visible()  # a new user reads the keys first
    keys.press("Escape")
    expect(page.get_by_test_id("shortcuts-help")).to_have_count(0)
    expect(card(page, 0)).to_be_focused()  # back on the card the keys act on, not on the "Keys" button

    keys.press("a", "j", "e")
    path = card(page, 1).get_by_test_id("card-editor").locator("input").first
    expect(path).to_be_focused()  # E puts the focus in the editor's first field (a person looks before typing)
    keys.press("Control+A")
    keys.type("notes/tablet.md")
    for _ in range(12):  # Tab to "Check edit", as a person would
        if _focused_testid(page) == "edit-check":
            break
        keys.press("Tab")
    assert _focused_testid(page) == "edit-check"
    keys.press("Enter")
    expect(card(page, 1).get_by_test_id("edit-check")).to_have_count(0)  # checked at the server, editor closed
    expect(card(page, 1)).to_be_focused()  # the focus goes back to the card, not lost to the page

    keys.press("j", "r")
    keys.type(REASON)  # at machine speed, typed before the reason box is on the page
    keys.press("Escape", "j", "s")
    keys.type("blue")
    keys.press("Escape", "j")
    expect(card(page, 4)).to_be_focused()
    keys.press("a")  # not hers to decide: nothing happens
    keys.press("Control+Enter")

    # submitted: her four decisions are in, the delete waits for a reviewer
    expect(card(page, 0).get_by_test_id("card-standing")).to_contain_text("Decided")
    expect(card(page, 4).get_by_test_id("card-standing")).to_contain_text("Waiting for")


def _reviewer_decides_by_keyboard(page: Page, url: str, keys: Keys) -> None:
    page.goto(url)
    expect(cards(page)).to_have_count(5)
    expect(card(page, 4)).to_be_focused()  # the one card left to him
    keys.press("a", "Control+Enter")


@pytest.mark.parametrize("pace", ["person", "machine"])
def test_a_batch_of_every_card_kind_decided_by_keyboard_alone(people: tuple[Page, Page], team_server: AppServer, pace: str):
    member, reviewer = people
    pause, typing = (450, 70) if pace == "person" else (0, 0)
    url = open_new_thread(member, team_server)
    sandbox = own_sandbox(member, team_server) / "notes"
    sandbox.mkdir(parents=True, exist_ok=True)
    (sandbox / "old.txt").write_text("old notes")
    send(member, BATCH)
    _member_decides_by_keyboard(member, Keys(member, pause, typing))
    _reviewer_decides_by_keyboard(reviewer, url, Keys(reviewer, pause, typing))

    expect(member.get_by_test_id("review-panel")).to_have_count(0)
    wait_idle(member)
    tools = messages(member, "tool")
    expect(tools).to_have_count(5)
    outcomes = [t.get_attribute("data-outcome") for t in tools.all()]
    assert outcomes == ["executed", "edited", "rejected", "answered", "executed"]
    expect(tools.nth(1)).to_contain_text("notes/tablet.md")
    expect(tools.nth(2)).to_contain_text(REASON)
    expect(tools.nth(3)).to_contain_text("blue")
    assert (sandbox / "tablet.md").read_text() == "hello"
    assert not (sandbox / "phone.md").exists()
    assert not (sandbox / "old.txt").exists()
