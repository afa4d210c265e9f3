"""Grants ("always allow"): the scopes, what a grant covers, and what a card may ask for.

A grant is made by a person who approves a card; afterwards a tool call it covers runs without
a card (the server checks grants before the review is raised). Scopes:

- ``call``: this exact call (same tool, same arguments) in this thread;
- ``thread``: this tool in this thread;
- ``person``: this tool in every thread of the thread's owner ("for them").

Every grant ends (``GRANT_HOURS``: 1 hour or 1 day) and may be revoked earlier. A policy can
forbid grants for a tool (``grantable = false``); a tool with a high risk level, or whose rights
need more than one approval in any rule, never takes one (a grant would let one person stand in
for two) (``grant_refusal``). A grant only ever stands in for its maker: it auto-approves a new
call only when its maker, as their account is NOW, could have approved that very call alone
(``stands_in_for``: the rule chosen by the new call's arguments needs one approval, the maker is
among who may decide it, and self-approval holds when the maker is the asker). Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from hitl_app.review.rights import Card, Person, ToolRights, check_decision

GrantScope = Literal["call", "thread", "person"]

GrantErrorCode = Literal["bad_request", "not_grantable", "forbidden"]
"""Why a grant may not be made (``GrantError.code``)."""

GRANT_SCOPES: tuple[GrantScope, ...] = ("call", "thread", "person")
"""The scopes, narrowest first."""

GRANT_HOURS: tuple[int, ...] = (1, 24)
"""How long a grant may last, in hours (1 hour, 1 day)."""


class GrantError(ValueError):
    """A grant that may not be made; ``str()`` is the sentence to show, ``code`` says why:
    ``bad_request`` (malformed), ``not_grantable`` (the policy forbids it), ``forbidden`` (this
    person may not grant it)."""

    def __init__(self, message: str, code: GrantErrorCode = "bad_request") -> None:
        super().__init__(message)
        self.code: GrantErrorCode = code


@dataclass(frozen=True)
class GrantRequest:
    """What a card asks for next to its approval: a scope and a lifetime in hours."""

    scope: GrantScope
    hours: int

    @classmethod
    def parse(cls, raw: Any) -> GrantRequest | None:
        """``{"scope": "thread", "hours": 24}`` (from the browser) -> a request (a request is kept
        as it is); None/"" -> None.

        Raises:
            GrantError("bad_request"): an unknown scope or lifetime, or not a mapping.
        """
        if isinstance(raw, GrantRequest):
            return raw
        if raw is None or raw == "" or raw == {}:
            return None
        if not isinstance(raw, Mapping):
            raise GrantError("A grant must say its scope and how long it lasts.")
        scope, hours = raw.get("scope"), raw.get("hours")
        if scope not in GRANT_SCOPES:
            raise GrantError(f"Unknown grant scope {str(scope)[:40]!r}; use one of {', '.join(GRANT_SCOPES)}.")
        if isinstance(hours, bool) or hours not in GRANT_HOURS:
            raise GrantError("A grant lasts 1 hour or 1 day.")
        return cls(scope, int(hours))


class GrantLike(Protocol):
    """The fields of a stored grant that matching reads (``store.desk_tables.GrantRecord``)."""

    scope: str
    tool: str
    thread_id: str | None
    owner_id: str
    args_hash: str | None
    expires_at: datetime
    revoked_at: datetime | None


def args_hash(args: Mapping[str, Any] | None) -> str:
    """A stable hash of a call's arguments (sorted keys, compact JSON, SHA-256 hex)."""
    text = json.dumps(dict(args or {}), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_active(grant: GrantLike, now: datetime) -> bool:
    """Not revoked and not ended at ``now``."""
    return grant.revoked_at is None and now < grant.expires_at


def covers(grant: GrantLike, *, thread_id: str, owner_id: str, tool: str, args: Mapping[str, Any] | None, now: datetime) -> bool:
    """True when ``grant`` approves a call of ``tool`` with ``args`` in ``thread_id`` (owned by
    ``owner_id``) at ``now``: active, same tool, and inside its scope."""
    if not is_active(grant, now) or grant.tool != tool:
        return False
    if grant.scope == "call":
        return grant.thread_id == thread_id and grant.args_hash == args_hash(args)
    if grant.scope == "thread":
        return grant.thread_id == thread_id
    if grant.scope == "person":
        return bool(owner_id) and grant.owner_id == owner_id
    return False


def scope_text(scope: str, owner_name: str = "") -> str:
    """The scope in words: ``"this tool in this thread"``."""
    if scope == "call":
        return "this exact call in this thread"
    if scope == "thread":
        return "this tool in this thread"
    return f"this tool in every thread of {owner_name}" if owner_name else "this tool in every thread of its owner"


def until_text(ends: datetime, now: datetime) -> str:
    """``"15:00 UTC"`` within a day of ``now``, else ``"3 May 15:00 UTC"``."""
    if ends - now < timedelta(hours=20):
        return f"{ends:%H:%M} UTC"
    return f"{ends.day} {ends:%b %H:%M} UTC"


def grant_note(scope: str, granted_by: str, ends: datetime, now: datetime, owner_name: str = "") -> str:
    """The line under an auto-approved call: ``"approved by grant: this tool in this thread, by
    Dana, until 15:00 UTC"``."""
    return f"approved by grant: {scope_text(scope, owner_name)}, by {granted_by}, until {until_text(ends, now)}"


GRANT_DECIDER = "grant:"
"""Prefix of the decider id a grant's approval is drafted under (``"grant:12"``): a card a grant
approved when its review arrived (``hitl_app.desk.grant_check.InterruptGrants``)."""

GRANT_ROLE = "grant"
"""The role such a drafted approval carries."""


def grant_decider(grant_id: int | None) -> str:
    """The decider id of grant ``grant_id``'s approvals: ``"grant:12"``."""
    return f"{GRANT_DECIDER}{grant_id}"


def grant_of(decider_id: str | None) -> int | None:
    """The grant id behind a decider id (``"grant:12"`` -> 12); None for a person's id."""
    text = str(decider_id or "")
    if not text.startswith(GRANT_DECIDER) or not text[len(GRANT_DECIDER):].isdigit():
        return None
    return int(text[len(GRANT_DECIDER):])


def grant_label(scope: str, granted_by: str, owner_name: str = "") -> str:
    """How a card a grant approved names its decider: ``"grant: this tool in this thread, by
    Dana"`` (so the card reads "Approved by grant: this tool in this thread, by Dana")."""
    return f"grant: {scope_text(scope, owner_name)}, by {granted_by}"


def needs_many(rights: ToolRights) -> int:
    """The largest ``approvals`` any rule of ``rights`` needs (1 when every rule needs one)."""
    return max([rights.base.approvals, *(r.approvals for r in rights.rules if r.approvals is not None)])


def grant_refusal(tool: str, *, grantable: bool, rights: ToolRights, risk_high: bool) -> str:
    """Why no grant may cover ``tool`` at all, as the sentence to show; ``""`` when one may.

    Refused: ``grantable = false``; a high risk level; rights that need more than one approval in
    any rule (a grant made on a small call must not stand in for a two-person rule on a big one).
    """
    if not grantable:
        return f"The policy does not allow grants for {tool}: every call is reviewed."
    if risk_high:
        return f"{tool} is high risk: every call is reviewed, so no grant may cover it."
    if (most := needs_many(rights)) > 1:
        return f"{tool} may need {most} approvals, so no single person can grant it."
    return ""


def stands_in_for(
    maker: Person, *, tool: str, args: Mapping[str, Any] | None, allowed_decisions: Sequence[str], owner_id: str,
    rights: ToolRights,
) -> bool:
    """True when ``maker`` (their account as it is now) could approve this call of ``tool`` with
    ``args`` in a thread of ``owner_id`` alone: the rule the arguments choose (its ``when``
    conditions included) needs one approval, ``approve`` is allowed, ``maker`` is among who may
    decide it, and self-approval holds when ``maker`` is the asker. A grant covers nothing else."""
    card = Card.for_request({"name": tool, "args": dict(args or {})}, allowed_decisions, owner_id=owner_id, rights=rights)
    return card.rule.approvals == 1 and check_decision(card, maker, "approve").allowed


def check_grant(
    request: GrantRequest, *, tool: str, grantable: bool, decision_type: str, approvals: int, person_is_owner: bool,
    person_is_admin: bool, refusal: str = "",
) -> None:
    """Refuse a grant the policy or the person's rights do not allow (the person's approval itself
    is checked by the review rights first).

    ``refusal``: ``grant_refusal`` for the tool (``""``: none).

    Raises:
        GrantError: ``not_grantable`` (``grantable = false``, ``refusal``, or the card needs more
            than one approval), ``bad_request`` (the card is not approved), ``forbidden`` (a
            ``person`` grant by someone who is neither the owner nor an admin).
    """
    if refusal:
        raise GrantError(refusal, "not_grantable")
    if not grantable:
        raise GrantError(f"The policy does not allow grants for {tool}: every call is reviewed.", "not_grantable")
    if approvals > 1:
        raise GrantError(f"{tool} needs {approvals} approvals, so no single person can grant it.", "not_grantable")
    if decision_type != "approve":
        raise GrantError("A grant goes with an approval: approve the card to add one.")
    if request.scope == "person" and not (person_is_owner or person_is_admin):
        raise GrantError("Only the thread's owner or an admin may grant a tool for all of the owner's threads.", "forbidden")
