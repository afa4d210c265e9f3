"""The SQL half of the review inbox: which pending reviews MAY wait for a person, in pages.

Pure query building (no I/O); ``hitl_app.store.inbox`` runs the queries and keeps the authority:
every card a query returns is still checked in Python (``hitl_app.review.waiting.waits_for``).
The filter here is a superset of that check, never narrower, so no waiting card is left out:

* the review is undecided and its thread says a review is pending (the partial index
  ``ix_review_requests_open`` of ``hitl_app.store.tables`` serves it);
* rights, from the policy and the person only: the thread is theirs and some tool of the review
  may let an owner approve (a rule with ``self_approval`` that lists ``owner`` or them, or a tool
  the policy does not name), or the thread is someone else's and some tool of the review lists
  them (their role or a higher one, or their email) in its base rule or any conditional rule;
* or a deadline escalated the review to a role they hold (``review_expiries``, status
  ``escalated``: the role joins every rule's reviewers, ``ToolRights.escalated``);
* they have not decided every card yet (their own drafts, ``decision_drafts``).

Tools are matched in ``review_requests.tool_names`` (``"a,b"``), each wrapped as ``",a,,b,"`` so
that ``",a,"`` finds one name exactly. A list cut at its column's length always matches.

Paging is oldest first by ``(requested_at, interrupt_id)``; a cursor (``after``) is the text
``"<requested_at ISO>|<interrupt_id>"`` of the last review on the previous page.
"""

# Tested by: tests/integration/store/test_store_inbox_paging.py

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from sqlalchemy import ColumnElement, and_, case, exists, false, func, literal, not_, or_, select, true
from sqlmodel import col
from sqlmodel import select as sqlmodel_select
from sqlmodel.sql.expression import Select

from hitl_app.review.rights import Person, ReviewRule, ToolRights, is_listed
from hitl_app.review.rights_policy import OWNER, ROLES
from hitl_app.store.desk_tables import ReviewExpiry
from hitl_app.store.tables import DecisionDraft, ReviewRequestRecord, ThreadRecord

TOOL_NAMES_MAX = 2000
"""``review_requests.tool_names``' length: a list this long may have been cut, so it always matches."""

def _rules(rights: ToolRights) -> list[ReviewRule]:
    return [rights.base, *(r.apply(rights.base) for r in rights.rules)]


def _listed_elsewhere(rule: ReviewRule, person: Person) -> bool:
    """Listed on someone else's thread (by role or email)."""
    return is_listed(rule, person, is_owner=False)


def _owner_may_approve(rule: ReviewRule, person: Person) -> bool:
    """On their own thread: listed and allowed to approve their own request."""
    return rule.self_approval and (OWNER in rule.reviewers or _listed_elsewhere(rule, person))


def _wrapped() -> ColumnElement[str]:
    """``",a,,b,"`` from ``"a,b"``: each tool name between its own two commas."""
    names = col(ReviewRequestRecord.tool_names)
    return literal(",") + func.replace(names, ",", ",,") + literal(",")


def _has_any(tools: list[str]) -> ColumnElement[bool]:
    """Some tool of the review is one of ``tools`` (``",a,b,"`` is enough to find ``",b,"``)."""
    if not tools:
        return false()
    names = literal(",") + col(ReviewRequestRecord.tool_names) + literal(",")
    return or_(*(names.like(f"%,{_escaped(t)},%", escape="/") for t in tools))


def _escaped(name: str) -> str:
    return name.replace("/", "//").replace("%", "/%").replace("_", "/_")


def _only_of(tools: list[str]) -> ColumnElement[bool]:
    """Every tool of the review is one of ``tools`` (removing each leaves nothing)."""
    if not tools:
        return false()
    rest: ColumnElement[str] = _wrapped()
    for t in tools:
        rest = func.replace(rest, f",{t},", "")
    return rest == ""


def _mine(me: str) -> ColumnElement[bool]:
    return and_(col(DecisionDraft.interrupt_id) == col(ReviewRequestRecord.interrupt_id), col(DecisionDraft.account_id) == me)


def my_decided_cards(me: str) -> ColumnElement[int]:
    """Per review row: how many of its cards ``me`` (account id as text) has decided already (0
    cheaply when none: most rows)."""
    count = select(func.count(func.distinct(col(DecisionDraft.action_index)))).where(_mine(me)).scalar_subquery()
    return case((exists().where(_mine(me)), count), else_=0)


def may_wait_for(
    person: Person, rights: Mapping[str, ToolRights], escalated: Sequence[str] = ()
) -> ColumnElement[bool]:
    """The SQL condition (over ``review_requests`` joined with ``threads``) that keeps every
    pending review with a card that may wait for ``person`` (see the module docstring);
    ``escalated``: the interrupt ids of the reviews a deadline escalated to a role they hold
    (``escalated_reviews``, kept by ``escalated_roles``)."""
    me = str(person.account_id)
    listed = sorted(t for t, r in rights.items() if any(_listed_elsewhere(rule, person) for rule in _rules(r)))
    never_self = sorted(t for t, r in rights.items() if not any(_owner_may_approve(rule, person) for rule in _rules(r)))
    cut = func.length(col(ReviewRequestRecord.tool_names)) >= TOOL_NAMES_MAX
    owner = col(ThreadRecord.owner)
    mine = and_(owner == me, or_(not_(_only_of(never_self)), cut)) if me else false()
    # no tool lists them: only their own threads (the owner index then finds them, not a scan)
    others = and_(or_(owner.is_(None), owner != me), or_(_has_any(listed), cut)) if listed else false()
    return and_(
        col(ReviewRequestRecord.decided) == false(),
        col(ThreadRecord.pending_review) == true(),
        or_(mine, others, col(ReviewRequestRecord.interrupt_id).in_(list(escalated)) if escalated else false()),
        my_decided_cards(me) < col(ReviewRequestRecord.action_count),
    )


def escalated_roles(person: Person) -> list[str]:
    """The roles a review escalated to would reach ``person`` with: theirs and the lower ones."""
    role = str(person.role).lower()
    return list(ROLES[: ROLES.index(role) + 1]) if role in ROLES else []


def escalated_reviews() -> Select[str, str | None]:
    """Every undecided review a deadline escalated (``review_expiries``, status ``escalated``):
    ``(interrupt id, role)`` rows, few. One read serves a whole inbox read: the page query's id
    list (the ones whose role the person holds, ``escalated_roles``) and the cards' widened rights."""
    return (
        sqlmodel_select(col(ReviewExpiry.interrupt_id), col(ReviewExpiry.escalate_to))
        .join(ReviewRequestRecord, col(ReviewRequestRecord.interrupt_id) == col(ReviewExpiry.interrupt_id))
        .where(col(ReviewExpiry.status) == "escalated", col(ReviewRequestRecord.decided) == false())
    )


def cursor_of(requested_at: datetime, interrupt_id: str) -> str:
    """The ``after`` text for a page that ends with this review."""
    return f"{requested_at.isoformat()}|{interrupt_id}"


def after_cursor(after: str, *, newest_first: bool = False) -> ColumnElement[bool]:
    """Reviews after the cursor ``after`` in page order (all when ``after`` is ``""``).

    Raises:
        ValueError: ``after`` is not a cursor made by ``cursor_of``.
    """
    if not after:
        return true()
    at_text, sep, interrupt_id = after.partition("|")
    if not sep:
        raise ValueError("not an inbox cursor")
    at = datetime.fromisoformat(at_text)
    r_at, r_id = col(ReviewRequestRecord.requested_at), col(ReviewRequestRecord.interrupt_id)
    if newest_first:
        return and_(r_at <= at, or_(r_at < at, r_id < interrupt_id))
    return and_(r_at >= at, or_(r_at > at, r_id > interrupt_id))
