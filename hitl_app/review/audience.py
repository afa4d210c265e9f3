"""Whom a new review may concern: the audience the review signal carries between workers.

Pure, built on ``hitl_app.review.rights``. When a run ends at a new review, the announcing worker
names everyone its cards could wait for (``audience_of``): the thread's owner, and every role and
email any rule of the review's tools lists (the base rule and every conditional rule, whatever
the arguments). An open inbox whose person is none of these (``Audience.concerns``) need not
re-read for that announcement: ``hitl_app.review.waiting.waits_for`` could not be true for them.

The audience is a superset, never narrower, and the inbox read stays the authority: whenever a
tab cannot tell (no audience, a payload it cannot read, another policy than the announcer's)
it reads. Decisions, undo, released claims and escalations announce without an audience.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hitl_app.review.rights import Person, ToolRights
from hitl_app.review.rights_policy import OWNER, ROLES, rights_in_force


def policy_key(rights: Mapping[str, ToolRights]) -> str:
    """A short fingerprint of the review rights (16 hex chars): two workers with the same policy
    get the same key, a changed policy another one."""
    text = repr(sorted((name, repr(r)) for name, r in rights.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Audience:
    """Who a new review may concern.

    Attributes:
        owner_id: the thread owner's account id as text (``""``: unknown).
        roles: roles the rights list; a person with one of them or a higher one is concerned.
        emails: emails the rights list, casefolded.
        policy: ``policy_key`` of the rights the audience was computed with.
    """

    owner_id: str
    roles: tuple[str, ...] = ()
    emails: tuple[str, ...] = ()
    policy: str = ""

    def concerns(self, person: Person, policy: str) -> bool:
        """True when the review may wait for ``person``, or when that cannot be told here
        (``policy``, the caller's ``policy_key``, differs from the announcer's)."""
        if policy != self.policy:
            return True
        if self.owner_id and str(person.account_id) == self.owner_id:
            return True
        role = str(person.role).lower()
        if role in ROLES and any(ROLES.index(role) >= ROLES.index(r) for r in self.roles if r in ROLES):
            return True
        email = (person.email or "").strip().casefold()
        return bool(email) and email in self.emails

    def to_json(self) -> dict[str, Any]:
        """The audience as JSON-ready data (``from_json`` reads it back)."""
        return {"o": self.owner_id, "r": list(self.roles), "e": list(self.emails), "p": self.policy}

    @classmethod
    def from_json(cls, data: Any) -> Audience | None:
        """The audience in ``data`` (as ``to_json`` wrote it); None when it is not one (the
        caller then reads, as for an announcement without an audience)."""
        if not isinstance(data, dict):
            return None
        owner, roles, emails, policy = data.get("o"), data.get("r"), data.get("e"), data.get("p")
        if not isinstance(owner, str) or not isinstance(policy, str) or not policy:
            return None
        if not isinstance(roles, list) or not isinstance(emails, list):
            return None
        if not all(isinstance(x, str) for x in [*roles, *emails]):
            return None
        return cls(owner, tuple(roles), tuple(emails), policy)


def audience_of(tools: Iterable[str], rights: Mapping[str, ToolRights], owner_id: str) -> Audience:
    """The audience of a new review whose cards call ``tools`` on a thread of ``owner_id``
    (account id as text, ``""`` unknown), under the policy's ``rights`` (tool name -> rights; a
    tool not named: only the owner decides). Not for an escalated review (announce it without)."""
    roles: set[str] = set()
    emails: set[str] = set()
    for tool in tools:
        tool_rights = rights_in_force(rights, tool)
        for rule in (tool_rights.base, *(r.apply(tool_rights.base) for r in tool_rights.rules)):
            for entry in rule.reviewers:
                if entry in ROLES:
                    roles.add(entry)
                elif entry != OWNER and entry.strip():
                    emails.add(entry.strip().casefold())
    return Audience(owner_id or "", tuple(sorted(roles, key=ROLES.index)), tuple(sorted(emails)), policy_key(rights))
