"""Grants checked at the server: before a built-in agent raises a review, and as any review arrives.

``GrantChecker(engines, rules)`` is the built-in agent's ``GrantCheck`` (its ``GrantGate``
middleware asks it in the graph, so a covered call never interrupts): for a call in a thread it
takes the first active grant (``standing_grant``) that may stand in for its maker on THIS call: the
policy still allows grants for the tool (``grant_refusal``: grantable, not high risk, no rule
needing two approvals), and the maker, as their account is now (``hitl_app.desk.people``:
active, current role), could have approved this very call alone (``stands_in_for``: the rule its
arguments choose, who may decide it, self-approval). It records the use (one audit record naming
the grant, one more use) and returns the line the thread shows under the call. No such grant, or
a database that does not answer: None, and the call gets a card.

``InterruptGrants`` applies the same rule to a review as it arrives from ANY agent (a
``HITL_AGENT`` agent has no ``GrantGate``); the run driver asks it before the cards are shown. A
built-in agent's covered calls never reach it (they did not interrupt), so no call is approved
twice: a call is in a review only when no grant covered it in the graph. Nor are the grants read
twice for one call: a call the graph's check just found no grant for (``GATE_CHECKED``, this
process, the same run) is not looked up again as its review arrives (issue 23: the review's rows
are read once, the card's server path has one database read fewer).
"""

# Tested by: tests/integration/desk/test_review_desk.py - through the runtime's agent
# Tested by: tests/integration/desk/test_grants_on_review.py - a developer's agent, reviews partly covered
# Tested by: tests/integration/desk/test_rights_now.py - a grant never stands in beyond its maker
# Tested by: tests/unit/desk/test_grants_read_once.py - a call the graph found uncovered is not looked up again

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.agent.policy import PolicyRule
from hitl_app.desk.final import final_decisions
from hitl_app.desk.people import PersonNow, current_people
from hitl_app.review.grants import GRANT_ROLE, grant_decider, grant_label, grant_refusal, stands_in_for
from hitl_app.review.rights import DEFAULT_RIGHTS, ToolRights
from hitl_app.review.types import AnyDecision, PendingReview
from hitl_app.store import drafts as drafts_store
from hitl_app.store import grants
from hitl_app.store.db import Engines
from hitl_app.store.desk_tables import GrantRecord
from hitl_app.store.reviews import AlreadyDecided, is_claimed
from hitl_app.store.tables import utcnow

log = logging.getLogger("hitl_app.grants")

GATE_CHECK_FRESH_S = 10.0
"""How long (seconds) the graph's check of a call stands for the review that call raises: the
interrupt follows the check in the same graph step, within milliseconds."""


class GateChecks:
    """(thread id, tool call id) -> when ``GrantChecker`` (the graph's gate) found no grant for that
    call, in this process. ``InterruptGrants`` takes an entry once (``take``) instead of reading the
    grants again for the same call; an entry older than ``GATE_CHECK_FRESH_S`` counts for nothing
    and is dropped at the next ``note``."""

    def __init__(self) -> None:
        self._at: dict[tuple[str, str], float] = {}

    def note(self, thread_id: str, call_id: str) -> None:
        """The gate found no grant for call ``call_id`` in ``thread_id`` just now."""
        now = time.monotonic()
        if len(self._at) > 256:  # the reviews raised since a while: forget the stale ones
            self._at = {k: at for k, at in self._at.items() if now - at <= GATE_CHECK_FRESH_S}
        self._at[(thread_id, call_id)] = now

    def take(self, thread_id: str, call_id: str | None) -> bool:
        """True (once) when the gate found no grant for the call within ``GATE_CHECK_FRESH_S``."""
        at = self._at.pop((thread_id, call_id), None) if call_id else None
        return at is not None and time.monotonic() - at <= GATE_CHECK_FRESH_S

    def __len__(self) -> int:
        return len(self._at)


GATE_CHECKED = GateChecks()
"""This process's calls the graph's grant check found no grant for (see ``GateChecks``)."""


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
            grant = await standing_grant(
                session, thread_id=thread_id, owner=owner, tool=rule.tool, args=args, rights=rule.rights,
                allowed_decisions=rule.allowed_decisions, now=now,
            )
            if grant is None:
                GATE_CHECKED.note(thread_id, str(tool_call["id"]))  # its review, if raised, is not looked up again
                return None
            line = await grants.use_grant(
                session=session, grant=grant, thread_id=thread_id, tool_call_id=tool_call["id"], args=args, now=now
            )
        log.info("call approved by grant thread=%s tool=%s grant=%s", thread_id, rule.tool, grant.id)
        return line


async def standing_grant(
    session: AsyncSession, *, thread_id: str, owner: str, tool: str, args: Mapping[str, Any], rights: ToolRights,
    allowed_decisions: Sequence[str], now: datetime,
) -> GrantRecord | None:
    """The narrowest active grant covering the call of ``tool`` with ``args`` in ``thread_id`` (owned
    by ``owner``) whose maker, as their account is now, could approve that call alone; None."""
    found = await grants.find_grants(session=session, thread_id=thread_id, owner_id=owner, tool=tool, args=args, now=now)
    return await first_standing(
        session, found, owner=owner, tool=tool, args=args, rights=rights, allowed_decisions=allowed_decisions
    )


async def first_standing(
    session: AsyncSession, found: Sequence[GrantRecord], *, owner: str, tool: str, args: Mapping[str, Any],
    rights: ToolRights, allowed_decisions: Sequence[str],
) -> GrantRecord | None:
    """The first of ``found`` (``store.grants.find_grants``, narrowest first) whose maker, as their
    account is now, could approve the call alone; None (no account read when ``found`` is empty)."""
    if not found:
        return None
    people = await current_people(session=session, account_ids=[g.granted_by_id for g in found])
    for grant in found:
        maker = people.get(grant.granted_by_id) or PersonNow(
            grant.granted_by_id, grant.granted_by_name, "", grant.granted_by_role  # no account: as recorded
        )
        if maker.active and stands_in_for(
            maker, tool=tool, args=args, allowed_decisions=allowed_decisions, owner_id=owner, rights=rights
        ):
            return grant
        log.info("grant %s does not cover this call: its maker %s could not approve it alone", grant.id, maker.account_id)
    return None


class InterruptGrants:
    """The grant check on a review as it arrives, whichever agent raised it (``HITL_AGENT`` agents
    have no ``GrantGate``); the run driver's ``on_interrupt`` (see the module).

    Each card whose tool allows ``approve`` and takes grants (``ReviewDesk.grant_refusal``) is
    matched against the active grants (``standing_grant``: the same rule as ``GrantChecker``). A
    card one covers is drafted as approved by it (decider ``grant_decider(id)``, role
    ``GRANT_ROLE``, name ``grant_label``); the use is counted. When every card is covered, the
    review's claim (audit rows naming the grant, ``store.grants.name_granted``) is written in the
    same commit and the approvals are returned (built by the one door,
    ``hitl_app.desk.final.final_decisions``): the driver resumes the run at once. Otherwise the
    other cards wait for people; the covered ones show as decided ("Approved by grant: ...").

    A review already claimed or decided on, a lost race, or a database error: nothing is covered
    (None); people decide.

    Args:
        session: opens an ``AsyncSession`` on the app database.
        grant_refusal: why no grant may cover a tool (``ReviewDesk.grant_refusal``; ``""``: one may).
        rights_for: the review rights in force for a review (``ReviewDesk.rights_for``).
    """

    def __init__(
        self, *, session: Callable[[], AsyncSession], grant_refusal: Callable[[str], str],
        rights_for: Callable[[PendingReview], Awaitable[dict[str, ToolRights]]],
    ) -> None:
        self._session = session
        self._grant_refusal = grant_refusal
        self._rights_for = rights_for

    def _grantable(self, review: PendingReview) -> list[int]:
        """The indexes of the cards a grant may approve (the tool allows ``approve`` and grants) and
        whose call the graph's check did not just find uncovered (``GATE_CHECKED``: not read twice)."""
        call_ids = list(review.tool_call_ids) + [None] * (len(review.action_requests) - len(review.tool_call_ids))
        grantable = [
            index for index, (action, config) in enumerate(zip(review.action_requests, review.review_configs, strict=True))
            if "approve" in config.allowed_decisions and not self._grant_refusal(action.name)
        ]
        return [index for index in grantable if not GATE_CHECKED.take(review.thread_id, call_ids[index])]

    async def __call__(self, review: PendingReview, owner: str) -> list[AnyDecision] | None:
        """Pre-decide ``review`` (run for ``owner``) by grants; the decisions to resume with when
        every card is covered (its claim written), else None."""
        try:
            return await self._predecide(review, owner)
        except Exception:  # noqa: BLE001 - no answer from the grants: people decide
            log.exception("grant check of a review failed thread=%s; people decide", review.thread_id)
            return None

    async def _predecide(self, review: PendingReview, owner: str) -> list[AnyDecision] | None:
        now, candidates = utcnow(), self._grantable(review)
        if not candidates:  # no card may take a grant: nothing to read
            return None
        async with self._session() as session:  # the active grants first: usually there are none
            found = {i: await self._found(session, review, i, owner, now) for i in candidates}
        if not any(found.values()):
            return None
        rights = await self._rights_for(review)
        async with self._session() as session:
            if await is_claimed(session=session, interrupt_id=review.interrupt_id):
                return None
            drafts = await drafts_store.read_drafts(session=session, interrupt_id=review.interrupt_id)
            covered = await self._covered(session, review, owner, rights, found, {d.action_index for d in drafts})
        if not covered:
            return None
        new = [
            drafts_store.NewDraft(i, grant_decider(g.id), grant_label(g.scope, g.granted_by_name, g.owner_name), GRANT_ROLE,
                                  {"type": "approve"})
            for i, g in covered.items()
        ]
        decisions: list[AnyDecision] | None = None
        claim = []
        if not drafts and len(covered) == len(review.action_requests):
            final = await final_decisions(
                session=self._session, review=review, owner_id=owner, rights=rights, drafts=drafts, now=now, new=new,
                requested=now,
            )
            decisions, claim = final.decisions, final.claim
        try:
            async with self._session() as session:
                await drafts_store.write_drafts(
                    session=session, thread_id=review.thread_id, interrupt_id=review.interrupt_id,
                    base_seq=drafts_store.next_seq(drafts), drafts=new, claim=claim, now=now,
                )
        except (drafts_store.DraftConflict, AlreadyDecided):
            return None  # someone decided meanwhile
        try:
            async with self._session() as session:
                await grants.count_uses(session=session, grant_ids=[g.id for g in covered.values() if g.id], now=now)
        except Exception:  # noqa: BLE001 - the approvals stand; only the count lags
            log.exception("grant uses not counted thread=%s", review.thread_id)
        log.info("review pre-decided by grants thread=%s cards=%s of %s grants=%s", review.thread_id, sorted(covered),
                 len(review.action_requests), sorted({g.id or 0 for g in covered.values()}))
        return decisions

    @staticmethod
    async def _found(session: AsyncSession, review: PendingReview, index: int, owner: str, now: datetime) -> list[GrantRecord]:
        """The active grants covering card ``index``'s call (``store.grants.find_grants``)."""
        action = review.action_requests[index]
        return await grants.find_grants(
            session=session, thread_id=review.thread_id, owner_id=owner, tool=action.name, args=action.args, now=now
        )

    async def _covered(
        self, session: AsyncSession, review: PendingReview, owner: str, rights: Mapping[str, ToolRights],
        found: Mapping[int, Sequence[GrantRecord]], decided: set[int],
    ) -> dict[int, GrantRecord]:
        """Card index -> the grant that approves it (the first of ``found`` whose maker may stand
        in, ``first_standing``), for the cards nobody decided yet."""
        out: dict[int, GrantRecord] = {}
        for index, candidates in found.items():
            if index in decided:
                continue
            action, config = review.action_requests[index], review.review_configs[index]
            grant = await first_standing(
                session, candidates, owner=owner, tool=action.name, args=action.args,
                rights=rights.get(action.name, DEFAULT_RIGHTS), allowed_decisions=config.allowed_decisions,
            )
            if grant is not None:
                out[index] = grant
        return out
