"""State of the audit page: the decisions the signed-in person may see, filters, and the CSV/JSON exports."""

# Tested by: tests/e2e/test_audit.py

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import reflex as rx

from hitl_app.auth import Principal
from hitl_app.runtime import get_runtime
from hitl_app.store import audit
from hitl_app.ui.rows import humanize_wait
from hitl_app.ui.state import SessionState
from hitl_app.ui.state.session import sign_in_redirect

ANY = "any"
"""The select value meaning "no filter" (Radix selects cannot hold an empty value)."""
TITLE_CHARS = 60
"""A thread's title is cut to this many characters in the Thread filter (stored titles are at most 60)."""


def thread_choices(rows: list[audit.AuditRow]) -> list[list[str]]:
    """The Thread filter's options as ``[value, label]`` pairs: ``[ANY, "any thread"]`` first, then
    one per thread id, labelled with its title (cut to ``TITLE_CHARS``, ``…`` added) and sorted by
    label; a title that several threads share gets the first 8 characters of the id appended."""
    titles: dict[str, str] = {}
    for r in rows:
        titles.setdefault(r.thread_id, " ".join((r.thread_title or "").split()) or "(untitled)")
    short = {tid: t if len(t) <= TITLE_CHARS else t[: TITLE_CHARS - 1].rstrip() + "…" for tid, t in titles.items()}
    counts: dict[str, int] = {}
    for label in short.values():
        counts[label] = counts.get(label, 0) + 1
    labelled = [(label if counts[label] == 1 else f"{label} ({tid[:8]})", tid) for tid, label in short.items()]
    return [[ANY, "any thread"], *([tid, label] for label, tid in sorted(labelled, key=lambda p: (p[0].casefold(), p[1])))]


def shown_rows(rows: list[audit.AuditRow]) -> list[audit.AuditRow]:
    """``rows`` with ``waited`` filled as the chat says it ("14 s", "1 min"; never "13.625 s")."""
    return [replace(r, waited=humanize_wait(r.waited_seconds)) for r in rows]


class AuditState(SessionState):
    """The decisions the signed-in person may see, newest first, filtered by thread, tool, decision."""

    rows: list[audit.AuditRow] = []
    thread_options: list[str] = [ANY]
    thread_choices: list[list[str]] = [[ANY, "any thread"]]
    tool_options: list[str] = [ANY]
    decision_options: list[str] = [ANY, "approve", "edit", "reject", "respond"]
    thread_filter: str = ANY
    tool_filter: str = ANY
    decision_filter: str = ANY
    error: str = ""

    @rx.var
    def count_label(self) -> str:
        """"1 decision", "3 decisions" (the rows shown)."""
        n = len(self.rows)
        return f"{n} decision" if n == 1 else f"{n} decisions"

    @rx.var
    def tool_pairs(self) -> list[list[str]]:
        """The Tool filter's options as ``[value, label]`` pairs."""
        return [[t, "any tool" if t == ANY else t] for t in self.tool_options]

    @rx.var
    def decision_pairs(self) -> list[list[str]]:
        """The Decision filter's options as ``[value, label]`` pairs."""
        return [[d, "any decision" if d == ANY else d] for d in self.decision_options]

    async def _query(self, viewer: Principal) -> list[audit.AuditRow]:
        return await audit.list_decisions(
            engine=get_runtime().engines.async_,
            viewer=viewer,
            thread_id="" if self.thread_filter == ANY else self.thread_filter,
            tool_name="" if self.tool_filter == ANY else self.tool_filter,
            decision_type="" if self.decision_filter == ANY else self.decision_filter,
        )

    async def _viewer(self) -> Principal | None:
        """The signed-in account; None (and the rows emptied) when signed out."""
        who = await self.require_principal()
        if who is None:
            self.rows = []
        return who

    @rx.event
    async def load(self):
        """on_load of /audit: the options from all of the account's decisions, then the rows."""
        self._ensure_identity()
        if (viewer := await self._viewer()) is None:
            return sign_in_redirect()
        try:
            everything = await audit.list_decisions(engine=get_runtime().engines.async_, viewer=viewer)
        except Exception as exc:  # noqa: BLE001 - shown on the page
            self.error = f"Could not read the audit trail: {type(exc).__name__}"
            return None
        self.thread_choices = thread_choices(everything)
        self.thread_options = [value for value, _ in self.thread_choices]
        self.tool_options = [ANY, *sorted({r.tool_name for r in everything})]
        for name, options in (("thread_filter", self.thread_options), ("tool_filter", self.tool_options)):
            if getattr(self, name) not in options:
                setattr(self, name, ANY)
        self.rows = shown_rows(await self._query(viewer))
        self.error = ""
        return None

    async def _set_filter(self, name: str, value: str, options: list[str]):
        if (viewer := await self._viewer()) is None:
            return sign_in_redirect()
        if isinstance(value, str) and value in options:
            setattr(self, name, value)
            self.rows = shown_rows(await self._query(viewer))
        return None

    @rx.event
    async def set_thread_filter(self, value: str):
        """Filter by thread id (``any`` = all threads)."""
        return await self._set_filter("thread_filter", value, self.thread_options)

    @rx.event
    async def set_tool_filter(self, value: str):
        """Filter by tool name."""
        return await self._set_filter("tool_filter", value, self.tool_options)

    @rx.event
    async def set_decision_filter(self, value: str):
        """Filter by decision type."""
        return await self._set_filter("decision_filter", value, self.decision_options)

    def _filename(self, ext: str) -> str:
        return f"hitl-audit-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.{ext}"

    @rx.event
    async def export_csv(self):
        """Download exactly the filtered rows as CSV (queried again, not taken from the page)."""
        if (viewer := await self._viewer()) is None:
            return sign_in_redirect()
        rows = await self._query(viewer)
        return rx.download(data=audit.to_csv(rows=rows), filename=self._filename("csv"))

    @rx.event
    async def export_json(self):
        """Download exactly the filtered rows as JSON."""
        if (viewer := await self._viewer()) is None:
            return sign_in_redirect()
        rows = await self._query(viewer)
        return rx.download(data=audit.to_json(rows=rows), filename=self._filename("json"))
