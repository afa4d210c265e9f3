"""Three workers + Redis + PostgreSQL: runs, reviews and Stop work whichever worker a tab lands on.

Each tab shows which worker process handled its page load (``worker-pid``, set by the on_load
handler, which runs in the worker that holds the tab's websocket). The test reloads tabs until
they sit on different workers and prints the pid of every step (quoted in the report).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_chat_flow import open_new_thread, send
from tests.helpers.app_server import AppServer
from tests.helpers.postgres import fresh_database

REDIS_URL = "redis://127.0.0.1:6379"


@pytest.fixture(scope="module")
def multi_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """The app with 3 workers, Redis (state + run bus) and a fresh PostgreSQL database."""
    with fresh_database() as url:
        env = {
            "DATABASE_URL": url, "REFLEX_REDIS_URL": REDIS_URL, "GUNICORN_CMD_ARGS": "--workers 3 --graceful-timeout 5",
            "HITL_DEMO_WPS": "12"
        }
        server = AppServer(tmp_path_factory.mktemp("multi-app"), env=env)
        server.start()
        yield server
        server.stop()


def worker_of(page: Page, before: str = "") -> str:
    """The pid of the worker that handled ``page``'s latest load (waits for a value newer than ``before``)."""
    marker = page.get_by_test_id("worker-pid")
    # A generous deadline, not the suite's 15 s: CI once saw the marker still empty 15 s after a reload on
    # a loaded 2-core machine. A likely cause, read in reflex/istate/manager/redis.py (not reproduced): a
    # worker whose keyspace subscription is not yet confirmed misses a lock's release notice and re-checks
    # the lock only when its wait times out (redis_lock_expiration, 10 s), per event of the page's load.
    expect(marker).to_have_attribute("data-pid", re.compile(r"^\d+:"), timeout=60_000)
    if before:
        expect(marker).not_to_have_attribute("data-pid", before, timeout=60_000)
    return marker.get_attribute("data-pid") or ""


def reload_onto_another_worker(page: Page, avoid: str, tries: int = 25) -> str:
    """Reload ``page`` until its websocket lands on a worker other than pid ``avoid``; returns the marker."""
    marker = worker_of(page)
    for _ in range(tries):
        if marker.split(":")[0] != avoid:
            return marker
        page.reload()
        marker = worker_of(page, before=marker)
    raise AssertionError(f"every reload landed on worker {avoid}")


def pid(marker: str) -> str:
    return marker.split(":")[0]


def test_three_workers_share_runs_reviews_and_stop(page: Page, multi_app: AppServer):
    log: list[str] = []
    url = open_new_thread(page, multi_app)
    a = worker_of(page)
    log.append(f"tab A opened the thread on worker {pid(a)}")

    tab_b = page.context.new_page()
    tab_b.on("pageerror", lambda e: page.problems.append(f"tab B pageerror: {e}"))  # type: ignore[attr-defined]
    tab_b.set_default_timeout(20_000)
    tab_b.goto(url)
    b = reload_onto_another_worker(tab_b, avoid=pid(a))
    log.append(f"tab B opened the same thread on worker {pid(b)}")

    # 1. tokens of a run on A's worker stream live into tab B on another worker
    send(page, "stream 40 words")
    streamed = tab_b.get_by_test_id("streaming-message")
    expect(streamed).to_be_visible()
    expect(streamed).to_have_text(re.compile(r"(\w+\W+){3}"))  # words, not the placeholder
    first = streamed.inner_text()
    expect(streamed).not_to_have_text(first)  # it grows while we look
    later = streamed.inner_text()
    log.append(
        f"tab B (worker {pid(b)}) saw tokens of the run on worker {pid(a)} live:"
        f" {len(first)} then {len(later)} chars, {later[:40]!r}..."
    )
    expect(tab_b.get_by_test_id("streaming-message")).to_have_count(0, timeout=30_000)
    expect(tab_b.locator("[data-testid=message][data-role=assistant]")).to_have_count(1)

    # 2. the review begun on A's worker appears live in tab B
    send(page, "email bob@example.com about the plan: see you at 10")
    expect(tab_b.get_by_test_id("approval-card")).to_have_attribute("data-action-name", "send_email")
    log.append(f"tab B (worker {pid(b)}) saw the pending review raised on worker {pid(a)} live")

    # 3. decided after a reload that lands on another worker than the one that began it
    b = reload_onto_another_worker(tab_b, avoid=pid(a))
    expect(tab_b.get_by_test_id("approval-card")).to_have_count(1)
    tab_b.get_by_test_id("decision-approve").click()
    tab_b.get_by_test_id("submit-decisions").click()
    log.append(f"tab B reloaded onto worker {pid(b)} and approved the review begun on worker {pid(a)}")
    expect(page.locator("[data-testid=message][data-role=tool]")).to_have_attribute("data-outcome", "executed")
    expect(page.locator("[data-testid=message][data-role=assistant]").last).to_contain_text("bob@example.com")
    log.append(f"tab A (worker {pid(a)}) saw the resumed run from worker {pid(b)} finish live")

    # 4. Stop pressed on another worker ends the run
    send(page, "stream 300 words")
    expect(tab_b.get_by_test_id("stop-button")).to_be_visible()
    tab_b.get_by_test_id("stop-button").click()
    expect(page.get_by_test_id("composer-input")).to_be_enabled(timeout=15_000)
    expect(page.get_by_test_id("streaming-message")).to_have_count(0)
    log.append(f"Stop pressed in tab B (worker {pid(b)}) ended the run owned by worker {pid(a)}")

    pids = {pid(a), pid(b)}
    print("\n--- multi-worker test (3 workers, Redis, PostgreSQL) ---")
    for line in log:
        print("  " + line)
    print(f"  distinct workers used: {sorted(pids)}")
    assert len(pids) == 2
    tab_b.close()
