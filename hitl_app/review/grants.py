"""Grants ("always allow"): the scopes, what a grant covers, and what a card may ask for.

A grant is made by a person who approves a card; afterwards a tool call it covers runs without
a card (the server checks grants before the review is raised). Scopes:

- ``call``: this exact call (same tool, same arguments) in this thread;
- ``thread``: this tool in this thread;
- ``person``: this tool in every thread of the thread's owner ("for them").

Every grant ends (``GRANT_HOURS``: 1 hour or 1 day) and may be revoked earlier. A policy can
forbid grants for a tool (``grantable = false``); a card whose rule needs more than one approval
never offers one (a grant would let one person stand in for two). Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

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
        """``{"scope": "thread", "hours": 24}`` (from the browser) -> a request; None/"" -> None.

        Raises:
            GrantError("bad_request"): an unknown scope or lifetime, or not a mapping.
        """
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


def check_grant(
    request: GrantRequest, *, tool: str, grantable: bool, decision_type: str, approvals: int, person_is_owner: bool,
    person_is_admin: bool,
) -> None:
    """Refuse a grant the policy or the person's rights do not allow (the person's approval itself
    is checked by the review rights first).

    Raises:
        GrantError: ``not_grantable`` (``grantable = false``, or the card needs more than one
            approval), ``bad_request`` (the card is not approved), ``forbidden`` (a ``person``
            grant by someone who is neither the owner nor an admin).
    """
    if not grantable:
        raise GrantError(f"The policy does not allow grants for {tool}: every call is reviewed.", "not_grantable")
    if approvals > 1:
        raise GrantError(f"{tool} needs {approvals} approvals, so no single person can grant it.", "not_grantable")
    if decision_type != "approve":
        raise GrantError("A grant goes with an approval: approve the card to add one.")
    if request.scope == "person" and not (person_is_owner or person_is_admin):
        raise GrantError("Only the thread's owner or an admin may grant a tool for all of the owner's threads.", "forbidden")
