"""Review metrics for the Metrics page: reviews per day, waited time, outcomes per tool.

Read from the audit records of a period (``AuditRecord``: one row per decided card) with aggregate
SQL (``aggregate``: counts per tool and outcome, one row per review, per-day counts and two ranks):
a page of 10,000 decisions reads a few hundred numbers, never the rows (issue 23: the page took 2.2 s).
``compute`` is the same arithmetic over loaded rows, the reference the SQL is tested against. A review is
one interrupt; its waited time is the longest of its rows' ``waited_seconds`` (the cards are
decided together). Outcomes per tool: ``approve``, ``edit``, ``reject``, ``respond``, ``expired``
(``via = "deadline"``) and ``granted`` (``via = "grant:<id>"``: approved by a grant, no card).

Who sees what: admins and reviewers every thread; a member is refused; a browser-only person
(before sign-in exists) sees its own threads only.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import case, func, or_
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.errors import ThreadError
from hitl_app.review.rights import Person
from hitl_app.review.types import DECISION_TYPES
from hitl_app.store.tables import AuditRecord, ThreadRecord, utcnow

OUTCOMES: tuple[str, ...] = (*DECISION_TYPES, "expired", "granted")
"""The outcome columns, in display order."""

PERIOD_DAYS: tuple[int, ...] = (7, 30, 90)
"""The periods the page offers, in days."""


@dataclass
class Metrics:
    """The numbers of one period.

    Attributes:
        days: ``[{"day": "2025-05-03", "reviews": 4}]``, one entry per day of the period, oldest first.
        median_wait_s / p95_wait_s: waited time of the period's reviews, in seconds (0 when none).
        reviews: how many reviews were decided (grants excluded: they had no card).
        per_tool: ``[{"tool": "send_email", "approve": 3, ..., "granted": 1}]``, busiest first.
    """

    days: list[dict[str, int | str]] = field(default_factory=list)
    median_wait_s: float = 0.0
    p95_wait_s: float = 0.0
    reviews: int = 0
    per_tool: list[dict[str, int | str]] = field(default_factory=list)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) by the nearest-rank method; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return float(ordered[rank - 1])


def outcome_of(row: AuditRecord) -> str:
    """The row's outcome column (see ``OUTCOMES``)."""
    if row.via and row.via.startswith("grant:"):
        return "granted"
    if row.via == "deadline":
        return "expired"
    return row.decision_type


def compute(rows: Sequence[AuditRecord], since: datetime, until: datetime) -> Metrics:
    """The metrics of ``rows`` (decided within ``since``..``until``, aware UTC)."""
    waited: dict[str, float] = {}
    day_of: dict[str, str] = {}
    tools: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        outcome = outcome_of(row)
        tools[row.tool_name][outcome] += 1
        if outcome == "granted":
            continue
        waited[row.interrupt_id] = max(waited.get(row.interrupt_id, 0.0), row.waited_seconds)
        day_of[row.interrupt_id] = row.decided_at.date().isoformat()
    per_day = Counter(day_of.values())
    days: list[dict[str, int | str]] = []
    day = since.date()
    while day <= until.date():
        days.append({"day": day.isoformat(), "reviews": per_day.get(day.isoformat(), 0)})
        day += timedelta(days=1)
    per_tool: list[dict[str, int | str]] = [
        {"tool": tool, **{o: counts.get(o, 0) for o in OUTCOMES}} for tool, counts in tools.items()
    ]
    per_tool.sort(key=lambda r: (-sum(int(r[o]) for o in OUTCOMES), str(r["tool"])))
    values = list(waited.values())
    return Metrics(days, percentile(values, 0.5), percentile(values, 0.95), len(values), per_tool)


METRICS_ROLES: tuple[str, ...] = ("reviewer", "admin")
"""The roles that may open the Metrics page (the page's link shows only to them)."""


def may_open_metrics(role: object) -> bool:
    """True when an account with ``role`` may see the review metrics (``METRICS_ROLES``)."""
    return str(role) in METRICS_ROLES


async def review_metrics(*, session: AsyncSession, person: Person, days: int, now: datetime | None = None) -> Metrics:
    """The metrics of the last ``days`` days that ``person`` may see.

    Raises:
        ThreadError: ``forbidden`` for a member (admins and reviewers only); ``bad_request`` for a
            period not in ``PERIOD_DAYS``.
    """
    if days not in PERIOD_DAYS:
        raise ThreadError(f"Pick a period of {', '.join(map(str, PERIOD_DAYS))} days.", code="bad_request")
    role = str(person.role)
    browser_only = not isinstance(person.account_id, int)
    if not may_open_metrics(role) and not browser_only:
        raise ThreadError("Review metrics are for reviewers and admins.", code="forbidden")
    now = now or utcnow()
    since = (now - timedelta(days=days - 1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return await aggregate(session, since, now, owner=str(person.account_id) if browser_only else None)


def _outcome_sql():  # noqa: ANN202 - a SQL expression; the column ``outcome_of`` gives in Python
    via = col(AuditRecord.via)
    return case((via.like("grant:%"), "granted"), (via == "deadline", "expired"), else_=col(AuditRecord.decision_type))


def _day(value: object) -> str:
    """``date(...)`` as the database gives it (text on SQLite, a date on PostgreSQL) -> ``2025-05-03``."""
    return value.isoformat() if hasattr(value, "isoformat") else str(value)[:10]


async def aggregate(session: AsyncSession, since: datetime, until: datetime, *, owner: str | None = None) -> Metrics:
    """``compute``'s metrics for the decisions within ``since``..``until`` (aware UTC), counted by the
    database: outcomes per tool (GROUP BY), each review's longest wait and last decision (GROUP BY
    ``interrupt_id``, grants left out), reviews per day, and the median and p95 by nearest rank (one
    ORDER BY ... OFFSET each). ``owner``: only the threads of this browser id."""
    where = [col(AuditRecord.decided_at) >= since, col(AuditRecord.decided_at) <= until]
    if owner is not None:
        where.append(col(AuditRecord.thread_id).in_(select(ThreadRecord.thread_id).where(col(ThreadRecord.owner) == owner)))
    outcome = _outcome_sql().label("outcome")
    tools: dict[str, Counter[str]] = defaultdict(Counter)
    tool = col(AuditRecord.tool_name)
    by_tool = select(tool, outcome, func.count()).where(*where).group_by(tool, outcome)
    for name, kind, count in (await session.exec(by_tool)).all():
        tools[name][kind] += int(count)
    not_granted = or_(col(AuditRecord.via).is_(None), ~col(AuditRecord.via).like("grant:%"))
    review = (
        select(func.max(col(AuditRecord.waited_seconds)).label("waited"), func.max(col(AuditRecord.decided_at)).label("at"))
        .where(*where, not_granted).group_by(col(AuditRecord.interrupt_id)).subquery()
    )
    n = int((await session.exec(select(func.count()).select_from(review))).one())
    day = func.date(review.c.at)
    per_day = {_day(d): int(c) for d, c in (await session.exec(select(day, func.count()).group_by(day))).all()}

    async def rank(q: float) -> float:
        if not n:
            return 0.0
        pick = select(review.c.waited).order_by(review.c.waited).offset(max(1, math.ceil(q * n)) - 1).limit(1)
        return float((await session.exec(pick)).one())

    days: list[dict[str, int | str]] = []
    d = since.date()
    while d <= until.date():
        days.append({"day": d.isoformat(), "reviews": per_day.get(d.isoformat(), 0)})
        d += timedelta(days=1)
    per_tool: list[dict[str, int | str]] = [{"tool": t, **{o: c.get(o, 0) for o in OUTCOMES}} for t, c in tools.items()]
    per_tool.sort(key=lambda r: (-sum(int(r[o]) for o in OUTCOMES), str(r["tool"])))
    return Metrics(days, await rank(0.5), await rank(0.95), n, per_tool)
