"""State of the audit page: the decisions the signed-in person may see, filters, the CSV/JSON exports
of the rows shown, and for an admin the signed export of the whole chain (as ``audit export`` writes it)."""

# Tested by: tests/e2e/test_audit.py

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime
from typing import TypedDict

import reflex as rx
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.auth import Principal
from hitl_app.review.types import DECISION_TYPES
from hitl_app.runtime import get_runtime
from hitl_app.store import audit
from hitl_app.store.audit_proof import load_private_key, signed_export
from hitl_app.ui.rows import humanize_wait
from hitl_app.ui.state.session import SessionState, sign_in_redirect

ANY = "any"
"""The select value meaning "no filter" (Radix selects cannot hold an empty value)."""
NO_KEY = (
    "No signing key is configured, so this page cannot sign an export. Set HITL_AUDIT_PRIVATE_KEY to the key file "
    "`python -m hitl_app audit keygen` made, or run `python -m hitl_app audit export` where the key is."
)
"""What an admin reads instead of the signed download when the app has no key."""
NO_SUCH_THREAD = "No decisions you may see on that thread, so every thread is shown."
"""Shown after ``/audit?thread=<id>`` names a thread without decisions this person may see (a thread that does
not exist reads the same, so the page does not tell whether it exists)."""
TITLE_CHARS = 60
"""A thread's title is cut to this many characters in the Thread filter (stored titles are at most 60)."""


PAGE = 100
"""Decisions read and shown at a time (newest first); "Show more" reads the next page from the database."""


def thread_choices(threads: list[tuple[str, str]]) -> list[list[str]]:
    """The Thread filter's options as ``[value, label]`` pairs: ``[ANY, "any thread"]`` first, then
    one per thread id (``threads``: ``(thread_id, title)`` pairs), labelled with its title (cut to
    ``TITLE_CHARS``, ``…`` added) and sorted by label; a title that several threads share gets the
    first 8 characters of the id appended."""
    titles: dict[str, str] = {}
    for tid, title in threads:
        titles.setdefault(tid, " ".join((title or "").split()) or "(untitled)")
    short = {tid: t if len(t) <= TITLE_CHARS else t[: TITLE_CHARS - 1].rstrip() + "…" for tid, t in titles.items()}
    counts: dict[str, int] = {}
    for label in short.values():
        counts[label] = counts.get(label, 0) + 1
    labelled = [(label if counts[label] == 1 else f"{label} ({tid[:8]})", tid) for tid, label in short.items()]
    return [[ANY, "any thread"], *([tid, label] for label, tid in sorted(labelled, key=lambda p: (p[0].casefold(), p[1])))]


def shown_rows(rows: list[audit.AuditRow]) -> list[audit.AuditRow]:
    """``rows`` with ``waited`` filled as the chat says it ("14 s", "1 min"; never "13.625 s")."""
    return [replace(r, waited=humanize_wait(r.waited_seconds)) for r in rows]


class _Filters(TypedDict):
    thread_id: str
    tool_name: str
    decision_type: str


class AuditState(SessionState):
    """The decisions the signed-in person may see, newest first, filtered by thread, tool, decision."""

    rows: list[audit.AuditRow] = []
    total: int = 0  # decisions matching the filters (the rows hold the newest pages of them)
    thread_options: list[str] = [ANY]
    thread_choices: list[list[str]] = [[ANY, "any thread"]]
    thread_count: int = 0  # threads with decisions the person may see (the Thread filter lists the newest ones)
    link_note: str = ""  # NO_SUCH_THREAD after a ?thread= link this person cannot use
    tool_options: list[str] = [ANY]
    decision_options: list[str] = [ANY, *DECISION_TYPES]
    thread_filter: str = ANY
    tool_filter: str = ANY
    decision_filter: str = ANY
    error: str = ""
    signing: str = ""  # "": not an admin; "ready": the signed download is offered; "no_key": NO_KEY is shown

    @rx.var
    def count_label(self) -> str:
        """"1 decision", "3 decisions"; "the newest 100 of 10,000 decisions" while pages are left."""
        n = self.total
        words = f"{n:,} decision" if n == 1 else f"{n:,} decisions"
        return words if len(self.rows) >= n else f"the newest {len(self.rows):,} of {words}"

    @rx.var
    def thread_note(self) -> str:
        """Under the Thread filter when it does not list every thread: which ones it lists, and how to reach
        another ("" when it lists them all)."""
        listed = len(self.thread_choices) - 1
        if self.thread_count <= listed:
            return ""
        return (f"Lists the {audit.THREAD_CHOICES} threads decided on most recently (by title), of "
                f"{self.thread_count:,}; for another, open /audit?thread= and its id.")

    @rx.var
    def empty_note(self) -> str:
        """Where the table has no row: why ("" when it has rows)."""
        if self.total > 0 or self.error:
            return ""
        if ANY == self.thread_filter == self.tool_filter == self.decision_filter:
            return ("No decisions you may see yet: one appears here once a card on your threads, or one you were "
                    "asked to decide, is decided.")
        return "No decisions match these filters."

    @rx.var
    def more(self) -> bool:
        """Older decisions match the filters beyond the rows shown ("Show more")."""
        return len(self.rows) < self.total

    @rx.var
    def tool_pairs(self) -> list[list[str]]:
        """The Tool filter's options as ``[value, label]`` pairs."""
        return [[t, "any tool" if t == ANY else t] for t in self.tool_options]

    @rx.var
    def decision_pairs(self) -> list[list[str]]:
        """The Decision filter's options as ``[value, label]`` pairs."""
        return [[d, "any decision" if d == ANY else d] for d in self.decision_options]

    def _filters(self) -> _Filters:
        return {"thread_id": "" if self.thread_filter == ANY else self.thread_filter,
                "tool_name": "" if self.tool_filter == ANY else self.tool_filter,
                "decision_type": "" if self.decision_filter == ANY else self.decision_filter}

    async def _query(self, viewer: Principal) -> list[audit.AuditRow]:
        """Every filtered row (the exports), up to ``list_decisions``' limit."""
        return await audit.list_decisions(engine=get_runtime().engines.async_, viewer=viewer, **self._filters())

    async def _read_first_page(self, viewer: Principal) -> tuple[list[audit.AuditRow], int]:
        """The newest ``PAGE`` filtered rows and how many match (one page query and one COUNT, concurrently)."""
        engine = get_runtime().engines.async_
        return await asyncio.gather(
            audit.list_decisions(engine=engine, viewer=viewer, limit=PAGE, **self._filters()),
            audit.count_decisions(engine=engine, viewer=viewer, **self._filters()),
        )

    async def _first_page(self, viewer: Principal) -> None:
        """Show the newest ``PAGE`` filtered rows and how many match."""
        rows, self.total = await self._read_first_page(viewer)
        self.rows = shown_rows(rows)

    async def _viewer(self) -> Principal | None:
        """The signed-in account; None (and the rows emptied) when signed out."""
        who = await self._require_principal()
        if who is None:
            self.rows = []
        return who

    @rx.event
    async def load(self):
        """on_load of /audit: the filters' options (the threads of the newest decisions, every tool, and the thread
        chosen if it is older), then the rows. ``?thread=<id>`` shows that thread's decisions (tool and decision
        filters cleared) when the signed-in person may see some; else every thread, with ``NO_SUCH_THREAD``."""
        self._ensure_identity()
        if (viewer := await self._viewer()) is None:
            return sign_in_redirect()
        engine = get_runtime().engines.async_
        asked = str(self.router.url.query_parameters.get("thread", ""))[:200]
        self.link_note = ""
        titles: dict[str, str | None] = {}  # thread_title answers already read in this load
        try:
            if asked:  # a link to one thread's decisions: that thread, any tool, any decision
                self.tool_filter = self.decision_filter = ANY
                titles[asked] = found = await audit.thread_title(engine=engine, viewer=viewer, thread_id=asked)
                self.thread_filter = asked if found is not None else ANY
                if found is None:  # the same words for a thread that does not exist and one that is not theirs
                    self.link_note = NO_SUCH_THREAD
            # the rows are read beside the options, with the filters as they stand (read again if one is gone)
            (threads, tools, self.thread_count), (rows, total) = await asyncio.gather(
                audit.decision_options(engine=engine, viewer=viewer), self._read_first_page(viewer)
            )
            chosen = self.thread_filter
            if chosen != ANY and chosen not in {tid for tid, _ in threads}:  # older than the newest listed
                title = titles[chosen] if chosen in titles else await audit.thread_title(
                    engine=engine, viewer=viewer, thread_id=chosen)
                threads = threads if title is None else [*threads, (chosen, title)]
            self.thread_choices = thread_choices(threads)
            self.thread_options = [value for value, _ in self.thread_choices]
            self.tool_options = [ANY, *tools]
            gone = [name for name, options in (("thread_filter", self.thread_options), ("tool_filter", self.tool_options))
                    if getattr(self, name) not in options]
            for name in gone:
                setattr(self, name, ANY)
            if gone:
                rows, total = await self._read_first_page(viewer)
            self.rows, self.total = shown_rows(rows), total
        except Exception as exc:  # noqa: BLE001 - shown on the page
            self.error = f"Could not read the audit trail: {type(exc).__name__}"
            return None
        self.error = ""
        self.signing = "" if not viewer.is_admin else "ready" if get_runtime().settings.audit_private_key else "no_key"
        return None

    async def _set_filter(self, name: str, value: str, options: list[str]):
        if (viewer := await self._viewer()) is None:
            return sign_in_redirect()
        if isinstance(value, str) and value in options:
            setattr(self, name, value)
            self.link_note = ""
            await self._first_page(viewer)
        return None

    @rx.event
    async def show_more(self):
        """Read the next ``PAGE`` older decisions (same filters) below the rows shown."""
        if (viewer := await self._viewer()) is None:
            return sign_in_redirect()
        more = await audit.list_decisions(
            engine=get_runtime().engines.async_, viewer=viewer, limit=PAGE, offset=len(self.rows), **self._filters()
        )
        self.rows = [*self.rows, *shown_rows(more)]
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

    @rx.event
    async def export_signed(self):
        """An admin's download of the whole audit chain, signed with ``HITL_AUDIT_PRIVATE_KEY``: the same
        file as ``python -m hitl_app audit export --format json`` (``audit verify --export`` checks it)."""
        if (viewer := await self._viewer()) is None:
            return sign_in_redirect()
        path = get_runtime().settings.audit_private_key
        if not viewer.is_admin or path is None:
            self.signing = "" if not viewer.is_admin else "no_key"
            return None
        try:
            key = load_private_key(path.read_bytes())
            async with AsyncSession(get_runtime().engines.async_) as session:
                text, _ = await signed_export(session=session, key=key, fmt="json")
        except (OSError, ValueError, TypeError) as exc:
            self.error = f"Could not sign the export with HITL_AUDIT_PRIVATE_KEY: {type(exc).__name__}: {exc}"[:300]
            return None
        return rx.download(data=text, filename=f"hitl-audit-chain-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json")
