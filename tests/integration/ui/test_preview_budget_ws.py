"""A write statement's row-count preview is per-review work with a budget of its own, through the
real websocket (prod app, SQL statements may run 30 s, the preview budget is the default 0.5 s).

* A pathological ``UPDATE`` (a recursive CTE with no end) gets its card with the preview cut at
  the budget: the card comes well before the statement's 30 s (a wide margin for a loaded CI
  machine), and says why it has no count.
* More tabs opening that review (the owner's reloads and other tabs) do not count the rows again:
  the server's CPU time for 4 more tabs stays far below one more count (before the fix each tab
  ran the statement for its full limit).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.app_server import AppServer
from tests.helpers.ws_client import WsClient

pytestmark = pytest.mark.app
ENDLESS = ("sql: UPDATE records SET amount = amount WHERE "
           "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c) > 0")
SQL_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    data = tmp_path_factory.mktemp("ws-preview-budget")
    s = AppServer(data / "app", env={"HITL_SQL_TIMEOUT_S": str(SQL_TIMEOUT_S)}, frontend=False)
    s.start()
    yield s
    s.stop()


def server_cpu_s(server: AppServer) -> float:
    """User + system CPU seconds of every live process of the server's session (its workers)."""
    assert server.proc is not None
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == server.proc.pid:  # field 6 (session id), counted after the ")"
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def preview_of(tab: WsClient) -> str:
    cards = tab.review.get("cards") or []
    return cards[0].get("preview_note", "") if cards else ""


async def test_an_endless_update_is_cut_at_the_budget_and_counted_once_for_every_tab(server):
    tid, mo = str(uuid.uuid4()), str(uuid.uuid4())
    await server.asign_in(mo)
    async with WsClient(server.url, browser_id=mo) as tab:
        await tab.load_thread(tid)
        started = time.monotonic()
        await tab.send(ENDLESS)
        await tab.wait_for(preview_of, timeout=SQL_TIMEOUT_S + 20, what="the card with its preview")
        waited = time.monotonic() - started
        note = preview_of(tab)
    assert "longer than 0.5 s" in note, note  # cut at the preview's own budget, and says so
    assert waited < SQL_TIMEOUT_S / 2, f"the card took {waited:.1f} s (the statement's own limit is {SQL_TIMEOUT_S} s)"

    before = server_cpu_s(server)

    async def open_tab(browser_id: str) -> str:
        async with WsClient(server.url, browser_id=browser_id) as other:
            await other.load_thread(tid)
            await other.wait_for(preview_of, timeout=3 * SQL_TIMEOUT_S + 20, what="the card's preview in a new tab")
            return preview_of(other)

    notes = await asyncio.gather(*(open_tab(mo) for _ in range(4)))
    spent = server_cpu_s(server) - before
    assert notes == [note] * 4
    assert spent < 2.0, f"4 more tabs cost the server {spent:.1f} CPU-s (one count is at most 0.5 s)"
