"""State of the audit page: this browser's decisions, filters, and the CSV/JSON exports."""

from __future__ import annotations

from datetime import UTC, datetime

import reflex as rx

from hitl_app.runtime import get_runtime
from hitl_app.store import audit
from hitl_app.ui.state import SessionState

ANY = "any"
"""The select value meaning "no filter" (Radix selects cannot hold an empty value)."""


class AuditState(SessionState):
    """All decisions on this browser's threads, newest first, filtered by thread, tool, decision."""

    rows: list[audit.AuditRow] = []
    thread_options: list[str] = [ANY]
    tool_options: list[str] = [ANY]
    decision_options: list[str] = [ANY, "approve", "edit", "reject", "respond"]
    thread_filter: str = ANY
    tool_filter: str = ANY
    decision_filter: str = ANY
    error: str = ""

    async def _query(self) -> list[audit.AuditRow]:
        return await audit.list_decisions(
            engine=get_runtime().engines.async_,
            owner=self.browser_id,
            thread_id="" if self.thread_filter == ANY else self.thread_filter,
            tool_name="" if self.tool_filter == ANY else self.tool_filter,
            decision_type="" if self.decision_filter == ANY else self.decision_filter,
        )

    @rx.event
    async def load(self) -> None:
        """on_load of /audit: the options from all of this browser's decisions, then the rows."""
        self.ensure_identity()
        try:
            everything = await audit.list_decisions(engine=get_runtime().engines.async_, owner=self.browser_id)
        except Exception as exc:  # noqa: BLE001 - shown on the page
            self.error = f"Could not read the audit trail: {type(exc).__name__}"
            return
        self.thread_options = [ANY, *sorted({r.thread_id for r in everything})]
        self.tool_options = [ANY, *sorted({r.tool_name for r in everything})]
        for name, options in (("thread_filter", self.thread_options), ("tool_filter", self.tool_options)):
            if getattr(self, name) not in options:
                setattr(self, name, ANY)
        self.rows = await self._query()
        self.error = ""

    async def _set_filter(self, name: str, value: str, options: list[str]) -> None:
        if isinstance(value, str) and value in options:
            setattr(self, name, value)
            self.rows = await self._query()

    @rx.event
    async def set_thread_filter(self, value: str) -> None:
        """Filter by thread id (``any`` = all threads)."""
        await self._set_filter("thread_filter", value, self.thread_options)

    @rx.event
    async def set_tool_filter(self, value: str) -> None:
        """Filter by tool name."""
        await self._set_filter("tool_filter", value, self.tool_options)

    @rx.event
    async def set_decision_filter(self, value: str) -> None:
        """Filter by decision type."""
        await self._set_filter("decision_filter", value, self.decision_options)

    def _filename(self, ext: str) -> str:
        return f"hitl-audit-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.{ext}"

    @rx.event
    async def export_csv(self):
        """Download exactly the filtered rows as CSV (queried again, not taken from the page)."""
        rows = await self._query()
        return rx.download(data=audit.to_csv(rows=rows), filename=self._filename("csv"))

    @rx.event
    async def export_json(self):
        """Download exactly the filtered rows as JSON."""
        rows = await self._query()
        return rx.download(data=audit.to_json(rows=rows), filename=self._filename("json"))
