"""The grant check the agent's ``GrantGate`` calls before a review is raised (app database side).

``GrantChecker(engines)`` is a ``GrantCheck``: for a call in a thread it finds the narrowest active
grant covering it (``hitl_app.store.grants.find_grant``), records the use (one audit record
naming the grant, one more use) and returns the line the thread shows under the call. No grant,
or a database that does not answer: None, and the call gets a card.
"""

# Tested by: tests/integration/threads/test_review_desk.py - through the runtime's agent

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store import grants
from hitl_app.store.db import Engines
from hitl_app.store.tables import utcnow

log = logging.getLogger("hitl_app.grants")


class GrantChecker:
    """Checks and uses grants in the app database (see the module).

    Args:
        engines: the app database engines.
    """

    def __init__(self, engines: Engines) -> None:
        self.engines = engines

    async def __call__(self, thread_id: str, owner: str, tool_call: Mapping[str, Any]) -> str | None:
        """The grant's line for ``tool_call`` (``{"id", "name", "args"}``) in ``thread_id`` run for
        ``owner``, after recording its use; None when no active grant covers it."""
        if not thread_id or not tool_call.get("id"):
            return None
        now = utcnow()
        args = tool_call.get("args") or {}
        async with AsyncSession(self.engines.async_, expire_on_commit=False) as session:
            grant = await grants.find_grant(
                session=session, thread_id=thread_id, owner_id=owner, tool=tool_call["name"], args=args, now=now
            )
            if grant is None:
                return None
            line = await grants.use_grant(
                session=session, grant=grant, thread_id=thread_id, tool_call_id=tool_call["id"], args=args, now=now
            )
        log.info("call approved by grant thread=%s tool=%s grant=%s", thread_id, tool_call["name"], grant.id)
        return line
