"""The grant check the agent's ``GrantGate`` calls before a review is raised (app database side).

``GrantChecker(engines, rules)`` is a ``GrantCheck``: for a call in a thread it reads the active
grants covering it (``hitl_app.store.grants.find_grants``, narrowest first) and takes the first
that may stand in for its maker on THIS call: the policy still allows grants for the tool
(``grant_refusal``: grantable, not high risk, no rule needing two approvals), and the maker, as
their account is now (``hitl_app.threads.people``: active, current role), could have approved
this very call alone (``stands_in_for``: the rule its arguments choose, who may decide it,
self-approval). It records the use (one audit record naming the grant, one more use) and returns
the line the thread shows under the call. No such grant, or a database that does not answer:
None, and the call gets a card.
"""

# Tested by: tests/integration/threads/test_review_desk.py - through the runtime's agent
# Tested by: tests/integration/threads/test_rights_now.py - a grant never stands in beyond its maker

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.agent.policy import PolicyRule
from hitl_app.review.grants import grant_refusal, stands_in_for
from hitl_app.store import grants
from hitl_app.store.db import Engines
from hitl_app.store.desk_tables import GrantRecord
from hitl_app.store.tables import utcnow
from hitl_app.threads.people import PersonNow, current_people

log = logging.getLogger("hitl_app.grants")


class GrantChecker:
    """Checks and uses grants in the app database (see the module).

    Args:
        engines: the app database engines.
        rules: the policy the agent runs under (rights, desk and risk per tool); a tool it does
            not name takes no grant.
    """

    def __init__(self, engines: Engines, rules: Sequence[PolicyRule] = ()) -> None:
        self.engines = engines
        self.rules = {r.tool: r for r in rules}

    async def __call__(self, thread_id: str, owner: str, tool_call: Mapping[str, Any]) -> str | None:
        """The grant's line for ``tool_call`` (``{"id", "name", "args"}``) in ``thread_id`` run for
        ``owner``, after recording its use; None when no active grant may approve it."""
        rule = self.rules.get(str(tool_call.get("name")))
        if not thread_id or not tool_call.get("id") or rule is None:
            return None
        if refusal := grant_refusal(rule.tool, grantable=rule.desk.grantable, rights=rule.rights, risk_high=rule.risk.high):
            log.info("no grant applies thread=%s tool=%s: %s", thread_id, rule.tool, refusal)
            return None
        now, args = utcnow(), tool_call.get("args") or {}
        async with AsyncSession(self.engines.async_, expire_on_commit=False) as session:
            found = await grants.find_grants(
                session=session, thread_id=thread_id, owner_id=owner, tool=rule.tool, args=args, now=now
            )
            people = await current_people(session=session, account_ids=[g.granted_by_id for g in found])
            grant = next((g for g in found if self._stands_in(g, people, rule, owner, args)), None)
            if grant is None:
                return None
            line = await grants.use_grant(
                session=session, grant=grant, thread_id=thread_id, tool_call_id=tool_call["id"], args=args, now=now
            )
        log.info("call approved by grant thread=%s tool=%s grant=%s", thread_id, rule.tool, grant.id)
        return line

    @staticmethod
    def _stands_in(
        grant: GrantRecord, people: Mapping[str, PersonNow], rule: PolicyRule, owner: str, args: Mapping[str, Any]
    ) -> bool:
        """True when ``grant``'s maker, as now, could approve this call alone (see the module)."""
        maker = people.get(grant.granted_by_id) or PersonNow(
            grant.granted_by_id, grant.granted_by_name, "", grant.granted_by_role  # no account: as recorded
        )
        ok = maker.active and stands_in_for(
            maker, tool=rule.tool, args=args, allowed_decisions=rule.allowed_decisions, owner_id=owner,
            rights=rule.rights,
        )
        if not ok:
            log.info("grant %s does not cover this call: its maker %s could not approve it alone", grant.id, maker.account_id)
        return ok
