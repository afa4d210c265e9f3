"""Reflex state kept in Redis expires (or its keys are deleted) while an approval card is pending.

The tab still shows the card. When the reviewer clicks Approve and Submit, the server has an empty
state for the tab: no thread, no cards, no browser id. Deciding must never silently do nothing or
claim "nothing to submit": the tab gets its state back from the URL and the checkpoint, the
decision is validated as usual, and the turn finishes.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from playwright.sync_api import Page, expect

from tests.e2e.ui import card, cards, messages, open_new_thread, send
from tests.helpers import app_db
from tests.helpers.app_server import AppServer

REDIS_URL = "redis://127.0.0.1:6379"


@pytest.fixture(scope="module")
def redis_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """The app with Reflex state (and the run bus) in Redis, two workers."""
    env = {"REFLEX_REDIS_URL": REDIS_URL, "GUNICORN_CMD_ARGS": "--workers 2 --graceful-timeout 5"}
    server = AppServer(tmp_path_factory.mktemp("redis-app"), env=env)
    server.start()
    yield server
    server.stop()


def expire_tab_state(page: Page, only: str = "") -> int:
    """Delete every Reflex state key of the tab's client token from Redis (``only``: just the keys
    whose name contains it, e.g. one state class); returns how many."""
    token = page.evaluate("() => window.sessionStorage.getItem('token')")
    assert token, "the tab has a client token"
    r = redis.Redis.from_url(REDIS_URL)
    try:
        keys = [k for k in r.scan_iter(match=f"*{token}*", count=1000) if only.encode() in k]
        if keys:
            r.delete(*keys)
        return len(keys)
    finally:
        r.close()


def test_deciding_after_the_tab_state_expired_rehydrates_and_finishes_the_turn(page: Page, redis_app: AppServer):
    url = open_new_thread(page, redis_app)
    send(page, "email expiry@example.com about state: gone")
    expect(cards(page)).to_have_count(1)
    assert expire_tab_state(page) > 0

    card(page, 0).get_by_test_id("decision-approve").click()
    page.get_by_test_id("submit-decisions").click()

    tool = messages(page, "tool")
    expect(tool).to_have_count(1)
    expect(tool).to_have_attribute("data-outcome", "executed")
    expect(messages(page, "assistant").last).to_contain_text("expiry@example.com")
    expect(page.get_by_test_id("composer-input")).to_be_enabled()
    expect(cards(page)).to_have_count(0)
    assert page.url == url
    assert app_db.outbox(redis_app.data_dir).count("expiry@example.com") == 1


def test_deciding_after_only_the_cards_state_was_lost_reloads_and_keeps_the_pick(page: Page, redis_app: AppServer):
    """A state lost in part (the chat's watcher wrote its own state back after the keys expired,
    so the browser id survived but the cards did not): the Approve click still counts (CI saw it
    silently dropped, Submit stuck at "Decide every card that is yours first")."""
    open_new_thread(page, redis_app)
    send(page, "email partial@example.com about state: half")
    expect(cards(page)).to_have_count(1)
    assert expire_tab_state(page, only="review_state") > 0

    card(page, 0).get_by_test_id("decision-approve").click()
    page.get_by_test_id("submit-decisions").click()

    expect(messages(page, "tool")).to_have_attribute("data-outcome", "executed")
    expect(cards(page)).to_have_count(0)
    assert app_db.outbox(redis_app.data_dir).count("partial@example.com") == 1
