"""Read-only views of what the demo tools really did: the outbox, the files sandbox, the records.

Small keyword-only functions taking what they read (habit 6 of ../shared/style.md). Sync: call
them with ``asyncio.to_thread`` from the event loop.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from hitl_app.store import sqlite as app_sqlite
from hitl_app.store.tables import OutboxMail


@dataclass(frozen=True)
class MailRow:
    """A sent mail: recipient, subject, body and when (UTC, to the second)."""

    recipient: str
    subject: str
    body: str
    sent_at: str


@dataclass(frozen=True)
class FileRow:
    """A file in the sandbox: path relative to the sandbox root and size in bytes."""

    path: str
    size: int


def outbox(*, engine: Engine, limit: int = 50) -> list[MailRow]:
    """The newest ``limit`` mails of the outbox."""
    with Session(engine) as session:
        rows = session.exec(select(OutboxMail).order_by(col(OutboxMail.id).desc()).limit(limit)).all()
    return [MailRow(r.to, r.subject, r.body, r.sent_at.strftime("%Y-%m-%d %H:%M:%S")) for r in rows]


def files(*, root: Path, limit: int = 200) -> list[FileRow]:
    """Regular files under ``root`` (links are not followed), sorted by path."""
    if not root.is_dir():
        return []
    out: list[FileRow] = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out.append(FileRow(str(path.relative_to(root)), path.stat().st_size))
            if len(out) >= limit:
                break
    return out


def records(*, db_path: Path, limit: int = 100) -> tuple[list[str], list[list[str]]]:
    """(column names, rows as strings) of the demo ``records`` table, opened read-only."""
    if not db_path.exists():
        return [], []
    try:
        conn = app_sqlite.connect(db_path, read_only=True)
    except sqlite3.Error:
        return [], []
    try:
        cur = conn.execute("SELECT * FROM records ORDER BY id LIMIT ?", (limit,))
        cols = [d[0] for d in cur.description]
        return cols, [[("" if v is None else str(v)) for v in row] for row in cur.fetchall()]
    except sqlite3.Error:
        return [], []
    finally:
        conn.close()
