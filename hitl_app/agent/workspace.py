"""The places the demo tools act on, per owner, and the record that makes each call happen once.

``DemoWorkspace`` owns:

* the files sandboxes: ``<files_root>/<owner key>/`` (``write_file``, ``delete_file``);
* the app database (sync SQLAlchemy engine): ``outbox`` (``send_email``) and ``tool_effects``,
  both with an ``owner`` column;
* the demo databases: one SQLite file per owner with the ``records`` table (``execute_sql``,
  ``read_data``) and its own ``hitl_tool_effects`` ledger. They are apart from the app database,
  so an approved ``DROP TABLE`` cannot touch the app's tables, and per owner, so one browser's
  SQL cannot read or change another's data.

An owner's space is created and seeded on first use (see ``hitl_app.store.owners`` for the layout;
``""`` is the shared anonymous space).

Exactly once per tool call: every effect is keyed ``"<thread_id>:<tool_call_id>"`` and its result
is recorded; a replay returns the recorded result without repeating the effect.
``send_email`` writes the mail and its record in one transaction of the app database;
``execute_sql`` writes the change and its record in one transaction of the owner's demo database
(``sql_exec.run_write_once``). For the file tools the effect and its record cannot share a
transaction; a crash between the two lets a replay run again (a write is naturally idempotent; a
delete replay reports the file missing).

Errors are ``ToolException`` with a plain message (SQLAlchemy errors included).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from langchain_core.tools import ToolException
from sqlalchemy import Engine, inspect, text
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, SQLModel, col, select

from hitl_app.agent.limits import ToolLimits
from hitl_app.agent.sandbox import SandboxError, check_quota, resolve_in_sandbox
from hitl_app.agent.sql_exec import LEDGER_DDL, read_records, run_read, run_write_once
from hitl_app.agent.sql_guard import DEMO_SCHEMA, QueryCancel, is_read_only_sql
from hitl_app.store import sqlite as app_sqlite
from hitl_app.store.owners import OwnerSpace, owner_space
from hitl_app.store.tables import OutboxMail, ToolEffect, table_of

EMAIL_PATTERN = r"^[^@\s<>,;:\"]+@[^@\s<>,;:\"]+\.[A-Za-z]{2,}$"
_EMAIL_RE = re.compile(EMAIL_PATTERN)
MAX_ADDRESS_CHARS = 254
MAX_SUBJECT_CHARS = 500
MAX_BODY_CHARS = 100_000

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


@contextlib.contextmanager
def app_db_errors() -> Iterator[None]:
    """Turn a SQLAlchemy error of the app database into a ToolException with a plain message."""
    try:
        yield
    except SQLAlchemyError as exc:
        detail = str(getattr(exc, "orig", None) or exc).splitlines()[0][:200]
        raise ToolException(f"The app database could not be used ({detail}); try again later.") from None


def _sandboxed(root: Path, path: str) -> Path:
    """``resolve_in_sandbox`` with the refusal turned into a ToolException for the model."""
    try:
        return resolve_in_sandbox(root, path)
    except SandboxError as exc:
        raise ToolException(f"Refused path: {exc}") from exc


def _add_owner_columns(engine: Engine) -> None:
    """Add the ``owner`` column to ``outbox`` / ``tool_effects`` made by an older version.

    Rows written before the upgrade belong to the anonymous space.
    """
    insp = inspect(engine)
    for table in (OutboxMail.__tablename__, ToolEffect.__tablename__):
        if "owner" not in {c["name"] for c in insp.get_columns(table)}:
            with contextlib.suppress(SQLAlchemyError), engine.begin() as conn:  # another worker won
                conn.execute(text(f"ALTER TABLE {table} ADD COLUMN owner VARCHAR(64) NOT NULL DEFAULT 'anonymous'"))


def _seed_demo_db(path: Path) -> None:
    """Create the ``records`` table (seeded when empty) and the ledger in ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = app_sqlite.connect(path)
    try:
        with conn:
            for ddl in (*DEMO_SCHEMA, LEDGER_DDL):
                conn.execute(ddl)
            if conn.execute("SELECT count(*) FROM records").fetchone()[0] == 0:
                conn.executemany("INSERT INTO records (name, category, amount) VALUES (?, ?, ?)", SEED_RECORDS)
    finally:
        conn.close()


class DemoWorkspace:
    """The places the demo tools act on (see the module docstring).

    Args:
        files_dir: folder holding one files sandbox per owner.
        engine: sync SQLAlchemy engine of the app database (outbox, tool_effects).
        demo_db_path: base path of the demo databases; owner ``k``'s file is
            ``<demo_db_path without suffix>/<k>.sqlite``.
        limits: bounds of each tool call (default: ``ToolLimits()``).

    Nothing is created until ``ensure()`` or ``space()`` is called.
    """

    def __init__(self, files_dir: Path, engine: Engine, demo_db_path: Path, limits: ToolLimits | None = None) -> None:
        self.files_root = Path(files_dir)
        self.engine = engine
        self.demo_db_path = Path(demo_db_path)
        self.limits = limits or ToolLimits()
        self._ready: set[str] = set()

    @contextlib.contextmanager
    def _setup_lock(self) -> Iterator[None]:
        # Several worker processes start at once (prod with Redis): one at a time creates and seeds.
        self.files_root.parent.mkdir(parents=True, exist_ok=True)
        with open(self.files_root.parent / ".workspace.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def ensure(self) -> None:
        """Create what is missing (idempotent): the ``outbox`` and ``tool_effects`` tables (with
        their ``owner`` column) in the app database, and the anonymous owner's space."""
        with self._setup_lock():
            SQLModel.metadata.create_all(self.engine, tables=[table_of(OutboxMail), table_of(ToolEffect)])
            _add_owner_columns(self.engine)
        self._ready.clear()  # like a restart: each owner's demo database is checked again on next use
        self.space("")

    def space(self, owner: str | None = "") -> OwnerSpace:
        """``owner``'s space, created on first use: the sandbox with ``SEED_FILES`` (only when the
        folder does not exist yet) and the demo database with ``records`` (seeded when empty)."""
        space = owner_space(files_root=self.files_root, demo_db_path=self.demo_db_path, owner=owner)
        if space.key in self._ready:
            return space
        with self._setup_lock():
            if not space.files_dir.exists():
                space.files_dir.mkdir(parents=True)
                for rel, body in SEED_FILES.items():
                    target = space.files_dir / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(body, encoding="utf-8")
            _seed_demo_db(space.demo_db)
        self._ready.add(space.key)
        return space

    # ---- exactly once ---------------------------------------------------------------------
    def recorded_result(self, key: str) -> str | None:
        """The recorded result for effect ``key`` in the app database, or None if it never completed."""
        with app_db_errors(), Session(self.engine) as session:
            effect = session.get(ToolEffect, key)
            return effect.result if effect else None

    def run_once(self, key: str, tool_name: str, effect: Callable[[], str], *, owner: str | None = "") -> str:
        """Run ``effect`` unless ``key`` already has a recorded result; record and return it."""
        if (done := self.recorded_result(key)) is not None:
            return done
        result = effect()
        owner_k = self.space(owner).key
        try:
            with app_db_errors(), Session(self.engine) as session:
                session.add(ToolEffect(tool_call_id=key, tool_name=tool_name, result=result, owner=owner_k))
                session.commit()
        except ToolException:
            if (done := self.recorded_result(key)) is not None:  # a concurrent replay recorded it first
                return done
            raise
        return result

    # ---- effects -------------------------------------------------------------------------
    def send_email(self, key: str, to: str, subject: str, body: str, *, owner: str | None = "") -> str:
        """Store a mail in the owner's outbox (mail + its record in one transaction); once per key.

        Raises:
            ToolException: ``to`` is not an email address; a NUL byte anywhere; ``to`` over 254,
                ``subject`` over 500 (or several lines), ``body`` over 100,000 characters.
        """
        to, subject = to.strip(), subject.strip()
        _check_mail(to, subject, body)
        if (done := self.recorded_result(key)) is not None:
            return done
        result = f"Email sent to {to} (subject: {subject})."
        owner_k = self.space(owner).key
        try:
            with app_db_errors(), Session(self.engine) as session:
                session.add(OutboxMail(tool_call_id=key, to=to, subject=subject, body=body, owner=owner_k))
                session.add(ToolEffect(tool_call_id=key, tool_name="send_email", result=result, owner=owner_k))
                session.commit()
        except ToolException:
            if (done := self.recorded_result(key)) is not None:  # a concurrent replay recorded it first
                return done
            raise
        return result

    def write_file(self, key: str, path: str, content: str, *, owner: str | None = "") -> str:
        """Write ``content`` (UTF-8) to ``path`` in the owner's sandbox, atomically; once per key.

        Raises:
            ToolException: the path is refused by ``resolve_in_sandbox``, is a folder, or the
                write would exceed the owner's file-count or byte quota.
        """
        root = self.space(owner).files_dir
        target = _sandboxed(root, path)
        data = content.encode("utf-8", "surrogatepass")

        def effect() -> str:
            if target.is_dir():
                raise ToolException(f"{path} is a folder, not a file.")
            try:
                check_quota(root, target, len(data), max_files=self.limits.files_max_count,
                            max_bytes=self.limits.files_max_bytes)
            except SandboxError as exc:
                raise ToolException(f"Refused: {exc}") from None
            _atomic_write(target, data)
            return f"Wrote {len(data)} bytes to {path}."

        return self.run_once(key, "write_file", effect, owner=owner)

    def delete_file(self, key: str, path: str, *, owner: str | None = "") -> str:
        """Delete the file ``path`` in the owner's sandbox; once per key.

        Raises:
            ToolException: refused path, missing file, or a folder.
        """
        target = _sandboxed(self.space(owner).files_dir, path)

        def effect() -> str:
            if target.is_dir():
                raise ToolException(f"{path} is a folder; only files can be deleted.")
            if not target.exists():
                raise ToolException(f"File not found: {path}")
            target.unlink()
            return f"Deleted {path}."

        return self.run_once(key, "delete_file", effect, owner=owner)

    def execute_sql(self, key: str, query: str, *, owner: str | None = "", cancel: QueryCancel | None = None) -> str:
        """Run ONE SQL statement on the owner's demo database; once per key.

        A statement ``is_read_only_sql`` accepts runs on a read-only connection; any other one
        (which the review policy asked a reviewer to approve) runs with its change and its
        record in one transaction. Both are bounded by ``limits``; ``cancel`` stops it.

        Returns:
            JSON ``{"columns", "rows", "truncated"[, "note"]}`` (at most ``limits.max_rows`` rows
            and ``limits.result_max_bytes`` bytes) for a statement with a result, else
            ``"<n> rows affected."``.

        Raises:
            ToolException: SQLite error, refused statement, time or size limit (plain message).
            QueryCancelled: ``cancel`` was set while the statement ran (nothing was changed).
        """
        if not isinstance(query, str) or "\x00" in query:
            raise ToolException("SQL error: the query must be text without NUL bytes.")
        cancel = cancel or QueryCancel()
        db = self.space(owner).demo_db
        if is_read_only_sql(query):
            return self.run_once(key, "execute_sql", lambda: run_read(db, query, self.limits, cancel), owner=owner)
        return run_write_once(db, key, query, self.limits, cancel)

    def read_data(self, key: str, table: str, *, owner: str | None = "", cancel: QueryCancel | None = None) -> str:
        """Read up to ``limits.max_rows`` rows of the owner's ``records`` or ``outbox`` as JSON.

        Outbox rows are ``{"to", "subject", "sent_at"}``: the body and the tool call id (which
        names the thread) are not shown.

        Raises:
            ToolException: any other table name, or the table cannot be read.
        """
        name = table.strip().lower() if isinstance(table, str) else ""
        if name not in ("records", "outbox"):
            raise ToolException(f"Unknown table {table!r}; readable tables: records, outbox.")
        space = self.space(owner)

        def effect() -> str:
            if name == "records":
                return json.dumps(read_records(space.demo_db, self.limits, cancel or QueryCancel()), default=str)
            with app_db_errors(), Session(self.engine) as session:
                mails = session.exec(
                    select(OutboxMail).where(OutboxMail.owner == space.key)
                    .order_by(col(OutboxMail.id)).limit(self.limits.max_rows)
                ).all()
                data = [{"to": m.to, "subject": m.subject, "sent_at": m.sent_at} for m in mails]
            return json.dumps(data, default=str)

        return self.run_once(key, "read_data", effect, owner=owner)


def _check_mail(to: str, subject: str, body: str) -> None:
    """Raise ToolException when a mail's fields are not sendable (see ``DemoWorkspace.send_email``)."""
    if any("\x00" in s for s in (to, subject, body)):
        raise ToolException("The email contains a NUL byte; remove it.")
    if len(to) > MAX_ADDRESS_CHARS or not _EMAIL_RE.match(to):
        raise ToolException(f"'{to[:80]}' is not a valid email address (expected name@domain.tld).")
    if len(subject) > MAX_SUBJECT_CHARS or "\n" in subject or "\r" in subject:
        raise ToolException(f"The subject must be one line of at most {MAX_SUBJECT_CHARS} characters.")
    if len(body) > MAX_BODY_CHARS:
        raise ToolException(f"The body is longer than {MAX_BODY_CHARS:,} characters.")


def _atomic_write(target: Path, data: bytes) -> None:
    """Write ``data`` to a temp file next to ``target`` and rename it over ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
