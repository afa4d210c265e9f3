"""Read-only probes for the test suite, mounted only when ``HITL_TEST_HOOKS=1``.

``GET /_test/watchers?token=<client token>`` answers ``{"token": ..., "watchers": <n>, "thread": <n>,
"inbox": <n>}``: how many ``watch`` handlers (in all; ``ChatState.watch``, the thread follower;
``InboxState.watch``, the inbox watcher) are still running for that browser tab in this server process. It
counts Reflex's own event tasks (named ``reflex_event|<state path>.<handler>|<token>|<txid>``), so
it sees every watcher the process holds, not only the ones the app keeps track of. Without the
variable nothing is mounted and the route does not exist.
"""

# Tested by: tests/integration/ui/test_tab_state.py - the probe routes it mounts

from __future__ import annotations

import asyncio
import os

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

TEST_HOOKS_ENV = "HITL_TEST_HOOKS"


def live_watchers(token: str, state: str = "") -> int:
    """Number of unfinished ``watch`` event tasks of client ``token`` in this process; with
    ``state`` (a state path's last part, e.g. ``chat_state``) only that state's watchers."""
    count = 0
    for task in asyncio.all_tasks():
        parts = task.get_name().split("|")
        if len(parts) >= 3 and parts[0] == "reflex_event" and parts[1].endswith(f"{state}.watch") and parts[2] == token:
            count += 0 if task.done() else 1
    return count


async def _watchers(request: Request) -> JSONResponse:
    token = request.query_params.get("token", "")
    return JSONResponse({
        "token": token, "watchers": live_watchers(token),
        "thread": live_watchers(token, "chat_state"), "inbox": live_watchers(token, "inbox_state"),
    })


def probe_routes() -> Starlette | None:
    """The probe routes as a Starlette app for ``rx.App(api_transformer=...)``, or ``None`` unless
    ``HITL_TEST_HOOKS=1`` is set in the server's environment."""
    if os.environ.get(TEST_HOOKS_ENV) != "1":
        return None
    return Starlette(routes=[Route("/_test/watchers", _watchers)])
