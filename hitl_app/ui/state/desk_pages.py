"""State of the Grants page (``/grants``) and the Metrics page (``/metrics``)."""

# Tested by: tests/e2e/test_review_desk_browser.py

from __future__ import annotations

from typing import Any

import reflex as rx
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.errors import ThreadError
from hitl_app.reviewers.metrics import OUTCOMES, PERIOD_DAYS, review_metrics
from hitl_app.runtime import get_runtime
from hitl_app.ui.rows import humanize_wait
from hitl_app.ui.state.session import SessionState, sign_in_redirect


def _when(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value is not None else "—"


class GrantsState(SessionState):
    """The grants this person made or that cover their threads; Revoke."""

    rows: list[dict[str, Any]] = []
    error: str = ""

    @rx.event
    async def load(self):
        """Read the grants (the server decides which this person sees)."""
        if (person := await self._require_principal()) is None:
            self.rows = []
            return sign_in_redirect()
        rows = await get_runtime().service.grants.list_grants(person)
        self.rows = [
            {
                "id": r.id, "granted_by": r.granted_by, "scope": r.scope, "tool": r.tool, "args": r.args,
                "thread": r.thread_id[:8], "thread_id": r.thread_id, "made": _when(r.made), "ends": _when(r.ends),
                "uses": r.uses, "status": r.status, "can_revoke": r.can_revoke,
                "revoked": f"revoked by {r.revoked_by} {_when(r.revoked_at)}" if r.revoked_at else "",
            }
            for r in rows
        ]
        return None

    @rx.event
    async def revoke(self, grant_id: int):
        """Revoke a grant (the server checks who may); the list is read again."""
        if (person := await self._require_principal()) is None:
            self.rows = []
            return sign_in_redirect()
        try:
            await get_runtime().service.grants.revoke(grant_id, person)
            self.error = ""
        except ThreadError as exc:
            self.error = exc.message
        return GrantsState.load

    @rx.var
    def count_label(self) -> str:
        """"2 active of 5 grants"."""
        active = sum(1 for r in self.rows if r.get("status") == "active")
        return f"{active} active of {len(self.rows)} grant{'s' if len(self.rows) != 1 else ''}"


class MetricsState(SessionState):
    """Review metrics over a chosen period."""

    period: str = "30"
    days: list[dict[str, Any]] = []
    per_tool: list[dict[str, Any]] = []
    median: str = "—"
    p95: str = "—"
    reviews: int = 0
    error: str = ""
    allowed: bool = False  # the numbers and charts show only once the server let this person read them
    outcomes: list[str] = list(OUTCOMES)
    periods: list[str] = [str(d) for d in PERIOD_DAYS]

    @rx.event
    async def load(self):
        """Read the metrics of the period (reviewers and admins; the server refuses others)."""
        if (person := await self._require_principal()) is None:
            self.days, self.per_tool, self.allowed = [], [], False
            return sign_in_redirect()
        runtime = get_runtime()
        try:
            async with AsyncSession(runtime.engines.async_, expire_on_commit=False) as session:
                m = await review_metrics(session=session, person=person, days=int(self.period))
        except (ThreadError, ValueError) as exc:
            self.error = getattr(exc, "message", "Pick a period.")
            self.allowed = getattr(exc, "code", "") != "forbidden"  # refused: only the message, no empty charts
            return None
        self.error, self.allowed = "", True
        self.days = [{"day": str(d["day"])[5:], "reviews": d["reviews"]} for d in m.days]
        self.per_tool = m.per_tool
        self.median, self.p95 = humanize_wait(m.median_wait_s), humanize_wait(m.p95_wait_s)
        self.reviews = m.reviews
        return None

    @rx.var
    def day_ticks(self) -> list[str]:
        """The days the "Reviews per day" chart labels: the newest day and every n-th one before it, at most 5
        whatever the period (a week: every other day), so the labels never touch at phone width and the days
        a reviewer looks at first are named. Explicit ticks also spare recharts measuring each label in the
        page (its default, ``preserveEnd``, laid out the page once per day: ~70 ms of a 30-day chart's first
        draw)."""
        days = [str(d["day"]) for d in self.days]
        step = max(1, -(-len(days) // 5))
        return days[::-1][::step][::-1]

    @rx.var
    def reconcile(self) -> str:
        """How the Reviews tile meets the Audit page's count (QA C7): "1 review with 2 decisions on
        its cards (the Audit page and the chart count decisions; 0 by a grant, without a card)."."""
        decisions = sum(int(row.get(o, 0)) for row in self.per_tool for o in OUTCOMES)
        granted = sum(int(row.get("granted", 0)) for row in self.per_tool)
        reviews = f"{self.reviews} review{'s' if self.reviews != 1 else ''}"
        return (f"{reviews} with {decisions - granted} decision{'s' if decisions - granted != 1 else ''} on "
                f"{'their' if self.reviews != 1 else 'its'} cards, plus {granted} made by a grant without a card: "
                f"the Audit page and the chart below count all {decisions} decisions.")

    @rx.event
    async def set_period(self, value: str):
        """Choose the period (7, 30 or 90 days) and read again."""
        self.period = value if value in self.periods else "30"
        return MetricsState.load
