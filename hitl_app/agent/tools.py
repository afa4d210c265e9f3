"""The demo tools, each with a real, inspectable side effect, and their sandbox.

``DemoWorkspace`` owns the places the tools touch:

* ``files_dir``: the files sandbox (``write_file``, ``delete_file``);
* the app database (sync SQLAlchemy engine): ``outbox`` (``send_email``) and ``tool_effects``;
* ``demo_db_path``: a separate SQLite file with the demo ``records`` table (``execute_sql``,
  ``read_data``), so an approved ``DROP TABLE`` cannot touch the app's tables.

Idempotency: every tool reads its ids from ``ToolRuntime`` (``runtime.tool_call_id`` and
``runtime.config["configurable"]["thread_id"]``, langchain 1.5.2 ``langchain.tools.ToolRuntime``)
and keys its effect ``f"{thread_id}:{tool_call_id}"`` in ``ToolEffect``. A replay of the same call
returns the recorded result and does not repeat the effect. ``send_email`` writes the mail and the
ToolEffect in one transaction. For the file tools the effect and its record cannot share a
transaction; a crash between the two would let a replay run again (a write is naturally
idempotent; a delete replay reports the file missing).

Errors: tools raise ``ToolException`` and are built with ``handle_tool_error=True``; LangChain's
``BaseTool.run`` then returns a ``ToolMessage(status="error")`` whose content is the exception
text. (create_agent's ToolNode default ``handle_tool_errors`` only handles argument validation
errors and re-raises everything else - langgraph/prebuilt/tool_node.py
``_default_handle_tool_errors`` - so the tool must handle its own errors.)
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import Field
from sqlalchemy import Engine, func
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlmodel import Session, SQLModel, select

from hitl_app.agent.payments import make_transfer_funds
from hitl_app.store import sqlite as app_sqlite
from hitl_app.store.tables import OutboxMail, Record, ToolEffect

MAX_PATH_BYTES = 1024
MAX_NAME_BYTES = 255
MAX_ROWS = 50
MAX_WAIT_SECONDS = 30.0
_EMAIL_PATTERN = r"^[^@\s<>,;:\"]+@[^@\s<>,;:\"]+\.[A-Za-z]{2,}$"
_EMAIL_RE = re.compile(_EMAIL_PATTERN)

EmailAddress = Annotated[str, Field(pattern=_EMAIL_PATTERN, description="an email address like name@example.com")]
"""The ``to`` of ``send_email``: checked by the tool's schema, so an edit with a bad address is refused on the card."""

SEED_FILES: dict[str, str] = {
    "notes/old.txt": "Old notes from last quarter. Safe to delete.\n",
    "notes/x.txt": "Scratch notes X.\n",
    "notes/y.txt": "Scratch notes Y.\n",
    "drafts/README.md": "# Drafts\n\nFiles under drafts/ can be written without a review.\n",
}
"""Files created in a new files sandbox (relative path -> text)."""

SEED_RECORDS: list[tuple[str, str, float]] = [
    ("Office chairs", "furniture", 1250.0),
    ("Standing desk", "furniture", 640.0),
    ("Laptop", "hardware", 1899.99),
    ("Monitor", "hardware", 329.5),
    ("Keyboard", "hardware", 89.0),
    ("Team lunch", "food", 214.75),
    ("Coffee beans", "food", 42.3),
    ("Cloud hosting", "services", 730.0),
    ("Design review", "services", 1200.0),
    ("Printer paper", "supplies", 25.6),
]
"""Rows of the demo ``records`` table (name, category, amount)."""


class SandboxError(ValueError):
    """A path the files tools refuse (escapes the sandbox, symlink, NUL, too long, ...)."""


def resolve_in_sandbox(root: Path, path: str) -> Path:
    """Map a relative ``path`` to a location inside ``root``, refusing anything unsafe.

    Args:
        root: the sandbox folder (need not exist yet).
        path: a relative POSIX-style path, e.g. ``"notes/x.txt"``.

    Returns:
        ``root / path`` (absolute; ``root`` resolved). The target itself may not exist.

    Raises:
        SandboxError: empty path, NUL byte, absolute path, ``..`` component, backslash, a name
            over 255 bytes, a path over 1024 bytes, or a symlink anywhere along the path
            (the target included).
    """
    if not isinstance(path, str) or not path.strip():
        raise SandboxError("The path is empty.")
    if "\x00" in path:
        raise SandboxError("The path contains a NUL byte.")
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise SandboxError(f"The path is longer than {MAX_PATH_BYTES} bytes.")
    if "\\" in path:
        raise SandboxError("Backslashes are not allowed in paths; use '/'.")
    pure = PurePosixPath(path)
    if pure.is_absolute() or re.match(r"^[A-Za-z]:", path):
        raise SandboxError(f"Absolute paths are not allowed: {path!r}. Use a path inside the workspace.")
    parts = [p for p in pure.parts if p != "."]
    if ".." in parts:
        raise SandboxError(f"'..' is not allowed in paths: {path!r}.")
    if not parts:
        raise SandboxError(f"The path {path!r} names the workspace itself, not a file.")
    for part in parts:
        if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise SandboxError(f"A name in the path is longer than {MAX_NAME_BYTES} bytes.")
    base = Path(root).resolve()
    current = base
    for part in parts:
        current = current / part
        if current.is_symlink():
            raise SandboxError(f"Symlinks are not allowed in paths: {path!r}.")
    if not current.resolve().is_relative_to(base):  # belt and braces
        raise SandboxError(f"The path {path!r} leaves the workspace.")
    return current


def is_read_only_sql(query: str, db_path: Path | str) -> bool:
    """True when ``query`` is ONE statement that SQLite itself says only reads.

    The statement is compiled (``EXPLAIN <query>``, which prepares but does not run it) on a
    read-only connection to ``db_path`` with an authorizer allowing only ``SQLITE_SELECT``,
    ``SQLITE_READ``, ``SQLITE_FUNCTION`` and ``SQLITE_RECURSIVE`` (a recursive CTE is still a
    read). Anything else (writes, PRAGMA, ATTACH, transactions), several statements, a syntax
    error, an unknown table or a missing database give False. Pure and deterministic for a given
    schema, so it is safe as a HITL ``when`` predicate (it runs again on resume).
    Source of the authorizer codes: Python's ``sqlite3`` module / sqlite.org/c3ref/c_alter_table.html.
    """
    if not isinstance(query, str) or not query.strip() or "\x00" in query:
        return False
    allowed = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}
    allowed.add(getattr(sqlite3, "SQLITE_RECURSIVE", 33))

    def authorizer(action: int, *_: Any) -> int:
        return sqlite3.SQLITE_OK if action in allowed else sqlite3.SQLITE_DENY

    db = Path(db_path)
    if not db.exists():
        return False
    try:
        conn = app_sqlite.connect(db, read_only=True)
    except sqlite3.Error:
        return False
    try:
        conn.set_authorizer(authorizer)
        conn.execute("EXPLAIN " + query).fetchall()
        return True
    except (sqlite3.Error, sqlite3.Warning):
        # Warning: "You can only execute one statement at a time." (several statements)
        return False
    finally:
        conn.close()


class DemoWorkspace:
    """The places the demo tools act on (see the module docstring).

    Args:
        files_dir: root of the files sandbox.
        engine: sync SQLAlchemy engine of the app database (outbox, tool_effects).
        demo_db_path: SQLite file of the demo ``records`` table.

    Nothing is created until ``ensure()`` is called.
    """

    def __init__(self, files_dir: Path, engine: Engine, demo_db_path: Path) -> None:
        self.files_dir = Path(files_dir)
        self.engine = engine
        self.demo_db_path = Path(demo_db_path)
        self._demo_engine: Engine | None = None

    @property
    def demo_engine(self) -> Engine:
        """SQLAlchemy engine of the demo database (created on first use)."""
        if self._demo_engine is None:
            self.demo_db_path.parent.mkdir(parents=True, exist_ok=True)
            self._demo_engine = app_sqlite.sync_engine(self.demo_db_path)
        return self._demo_engine

    def ensure(self) -> None:
        """Create what is missing (idempotent).

        * ``files_dir`` with ``SEED_FILES``, only when the folder does not exist yet;
        * the ``outbox`` and ``tool_effects`` tables in the app database;
        * the demo database with ``records`` seeded from ``SEED_RECORDS`` when empty.
        """
        # Several worker processes start at once (prod with Redis): one at a time seeds.
        self.files_dir.parent.mkdir(parents=True, exist_ok=True)
        with open(self.files_dir.parent / ".workspace.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                self._ensure_locked()
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _ensure_locked(self) -> None:
        if not self.files_dir.exists():
            self.files_dir.mkdir(parents=True)
            for rel, text in SEED_FILES.items():
                target = self.files_dir / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
        SQLModel.metadata.create_all(
            self.engine, tables=[OutboxMail.__table__, ToolEffect.__table__]
        )
        SQLModel.metadata.create_all(self.demo_engine, tables=[Record.__table__])
        with Session(self.demo_engine) as session:
            if session.exec(select(func.count()).select_from(Record)).one() == 0:
                session.add_all(
                    Record(name=n, category=c, amount=a) for n, c, a in SEED_RECORDS
                )
                session.commit()

    # ---- idempotency ---------------------------------------------------------------------
    def recorded_result(self, key: str) -> str | None:
        """The recorded result for effect ``key``, or None if that call never completed."""
        with Session(self.engine) as session:
            effect = session.get(ToolEffect, key)
            return effect.result if effect else None

    def run_once(self, key: str, tool_name: str, effect: Callable[[], str]) -> str:
        """Run ``effect`` unless ``key`` already has a recorded result; record and return it."""
        if (done := self.recorded_result(key)) is not None:
            return done
        result = effect()
        try:
            with Session(self.engine) as session:
                session.add(ToolEffect(tool_call_id=key, tool_name=tool_name, result=result))
                session.commit()
        except IntegrityError:  # a concurrent replay recorded it first
            return self.recorded_result(key) or result
        return result

    # ---- effects -------------------------------------------------------------------------
    def send_email(self, key: str, to: str, subject: str, body: str) -> str:
        """Store a mail in the outbox (mail + ToolEffect in one transaction); idempotent per key.

        Raises:
            ToolException: ``to`` does not look like an email address.
        """
        to = to.strip()
        if not _EMAIL_RE.match(to):
            raise ToolException(f"'{to}' is not a valid email address (expected name@domain.tld).")
        if (done := self.recorded_result(key)) is not None:
            return done
        result = f"Email sent to {to} (subject: {subject})."
        try:
            with Session(self.engine) as session:
                session.add(OutboxMail(tool_call_id=key, to=to, subject=subject, body=body))
                session.add(ToolEffect(tool_call_id=key, tool_name="send_email", result=result))
                session.commit()
        except IntegrityError:
            return self.recorded_result(key) or result
        return result

    def write_file(self, key: str, path: str, content: str) -> str:
        """Write ``content`` (UTF-8) to ``path`` inside the sandbox, atomically; idempotent per key.

        Raises:
            ToolException: the path is refused by ``resolve_in_sandbox`` or is a folder.
        """
        target = _sandboxed(self.files_dir, path)

        def effect() -> str:
            if target.is_dir():
                raise ToolException(f"{path} is a folder, not a file.")
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".part")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(content)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            return f"Wrote {len(content.encode('utf-8'))} bytes to {path}."

        return self.run_once(key, "write_file", effect)

    def delete_file(self, key: str, path: str) -> str:
        """Delete the file ``path`` inside the sandbox; idempotent per key.

        Raises:
            ToolException: refused path, missing file, or a folder.
        """
        target = _sandboxed(self.files_dir, path)

        def effect() -> str:
            if target.is_dir():
                raise ToolException(f"{path} is a folder; only files can be deleted.")
            if not target.exists():
                raise ToolException(f"File not found: {path}")
            target.unlink()
            return f"Deleted {path}."

        return self.run_once(key, "delete_file", effect)

    def execute_sql(self, key: str, query: str) -> str:
        """Run ONE SQL statement on the demo database; idempotent per key.

        Returns JSON ``{"columns": [...], "rows": [[...], ...], "truncated": bool}`` (at most 50
        rows) for a query with a result, else ``"<n> rows affected."``.

        Raises:
            ToolException: SQLite error (syntax, unknown table, several statements, ...).
        """

        def effect() -> str:
            conn = app_sqlite.connect(self.demo_db_path)
            try:
                cur = conn.execute(query)
                if cur.description:
                    rows = cur.fetchmany(MAX_ROWS + 1)
                    return json.dumps(
                        {
                            "columns": [d[0] for d in cur.description],
                            "rows": [list(r) for r in rows[:MAX_ROWS]],
                            "truncated": len(rows) > MAX_ROWS,
                        },
                        default=str,
                    )
                conn.commit()
                return f"{max(cur.rowcount, 0)} rows affected."
            except (sqlite3.Error, sqlite3.Warning) as exc:
                raise ToolException(f"SQL error: {exc}") from exc
            finally:
                conn.close()

        return self.run_once(key, "execute_sql", effect)

    def read_data(self, key: str, table: str) -> str:
        """Read up to 50 rows of ``records`` (demo DB) or ``outbox`` (app DB) as JSON rows.

        Raises:
            ToolException: any other table name.
        """
        name = table.strip().lower()
        if name not in ("records", "outbox"):
            raise ToolException(f"Unknown table {table!r}; readable tables: records, outbox.")

        def effect() -> str:
            if name == "records":
                try:
                    with Session(self.demo_engine) as session:
                        rows = session.exec(select(Record).order_by(Record.id).limit(MAX_ROWS)).all()
                        data = [r.model_dump() for r in rows]
                except SQLAlchemyError as exc:  # e.g. the table was dropped with execute_sql
                    detail = str(getattr(exc, "orig", exc)).splitlines()[0]
                    raise ToolException(
                        f"The records table cannot be read ({detail}). It may have been changed with SQL; "
                        "restarting the app recreates it."
                    ) from None
            else:
                with Session(self.engine) as session:
                    mails = session.exec(
                        select(OutboxMail).order_by(OutboxMail.id).limit(MAX_ROWS)
                    ).all()
                    data = [m.model_dump(exclude={"body"}) for m in mails]
            return json.dumps(data, default=str)

        return self.run_once(key, "read_data", effect)


def _sandboxed(root: Path, path: str) -> Path:
    """``resolve_in_sandbox`` with the refusal turned into a ToolException for the model."""
    try:
        return resolve_in_sandbox(root, path)
    except SandboxError as exc:
        raise ToolException(f"Refused path: {exc}") from exc


def effect_key(runtime: ToolRuntime | None) -> str:
    """``"<thread_id>:<tool_call_id>"`` from a ToolRuntime (the idempotency key of a call).

    Without a tool call id (a direct call outside an agent) a fresh unique key is returned, so
    the effect happens and is never mistaken for a replay.
    """
    config = getattr(runtime, "config", None) or {}
    thread_id = (config.get("configurable") or {}).get("thread_id") or "no-thread"
    call_id = getattr(runtime, "tool_call_id", None) or f"direct-{uuid.uuid4().hex}"
    return f"{thread_id}:{call_id}"


def build_tools(workspace: DemoWorkspace) -> list[BaseTool]:
    """The eight demo tools bound to ``workspace`` (sync; LangGraph runs them in threads).

    Returns, in order: send_email, write_file, delete_file, execute_sql, ask_user, read_data,
    slow_task, transfer_funds (``hitl_app.agent.payments``). Each has ``handle_tool_error=True`` so a ``ToolException`` becomes a
    ``ToolMessage(status="error")`` with the error text as content.
    """

    def send_email(to: EmailAddress, subject: str, body: str, runtime: ToolRuntime) -> str:
        """Send an email: stores it in the outbox. `to` must be an email address."""
        return workspace.send_email(effect_key(runtime), to, subject, body)

    def write_file(path: str, content: str, runtime: ToolRuntime) -> str:
        """Write a UTF-8 text file at a relative path inside the workspace (replaces it)."""
        return workspace.write_file(effect_key(runtime), path, content)

    def delete_file(path: str, runtime: ToolRuntime) -> str:
        """Delete a file at a relative path inside the workspace."""
        return workspace.delete_file(effect_key(runtime), path)

    def execute_sql(query: str, runtime: ToolRuntime) -> str:
        """Run one SQL statement on the demo database (table `records`)."""
        return workspace.execute_sql(effect_key(runtime), query)

    def ask_user(question: str, runtime: ToolRuntime) -> str:
        """Ask the user a question; the reviewer answers it."""
        return workspace.run_once(effect_key(runtime), "ask_user", lambda: "No answer was given.")

    def read_data(table: str, runtime: ToolRuntime) -> str:
        """Read rows of the `records` or `outbox` table (at most 50)."""
        return workspace.read_data(effect_key(runtime), table)

    def slow_task(seconds: float, runtime: ToolRuntime) -> str:
        """Block for `seconds` seconds (at most 30), like a slow disk or network call."""
        if seconds < 0:
            raise ToolException("seconds must be 0 or more.")
        wait = min(float(seconds), MAX_WAIT_SECONDS)

        def effect() -> str:
            time.sleep(wait)
            return f"Waited {wait:g} s"

        return workspace.run_once(effect_key(runtime), "slow_task", effect)

    funcs = [send_email, write_file, delete_file, execute_sql, ask_user, read_data, slow_task,
             make_transfer_funds(ledger_path=lambda _owner: workspace.demo_db_path, effect_key=effect_key)]
    return [
        StructuredTool.from_function(f, handle_tool_error=True, handle_validation_error=_invalid_arguments)
        for f in funcs
    ]


def _invalid_arguments(exc: Exception) -> str:
    """The ToolMessage text for arguments that do not fit a tool's schema (the tool did not run)."""
    errors = getattr(exc, "errors", lambda: [])()
    parts = []
    for err in errors[:3]:
        field = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        if err.get("type") == "string_pattern_mismatch" and field == "to":
            parts.append(f"`to` is not a valid email address (got {err.get('input')!r})")
        else:
            parts.append(f"`{field}`: {err.get('msg')}")
    return "Not run: invalid arguments: " + ("; ".join(parts) or str(exc)) + "."
