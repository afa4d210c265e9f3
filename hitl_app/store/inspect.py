"""Read-only views of what the demo tools really did for ONE owner: outbox, files, records.

Small keyword-only functions taking what they read. Each shows only the owner's own workspace
(see ``hitl_app.store.owners``): another browser's mail, files and records are never listed.
Sync: call them with ``asyncio.to_thread`` from the event loop.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, col, select

from hitl_app.store import sqlite as app_sqlite
from hitl_app.store.owners import owner_key
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


def outbox(*, engine: Engine, owner: str | None, limit: int = 50) -> list[MailRow]:
    """The newest ``limit`` mails ``owner``'s tools sent ([] if the outbox cannot be read)."""
    try:
        with Session(engine) as session:
            rows = session.exec(
                select(OutboxMail).where(OutboxMail.owner == owner_key(owner))
                .order_by(col(OutboxMail.id).desc()).limit(limit)
            ).all()
    except SQLAlchemyError:  # e.g. an outbox table from an older version, not migrated yet
        return []
    return [MailRow(r.to, r.subject, r.body, r.sent_at.strftime("%Y-%m-%d %H:%M:%S")) for r in rows]


def _walk(folder: Path, root: Path) -> Iterator[FileRow]:
    """Regular files under ``folder``, each folder read with ``os.scandir`` only when reached."""
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(Path(entry.path), root)
        elif entry.is_file(follow_symlinks=False) and not entry.name.startswith(".tmp-"):
            yield FileRow(str(Path(entry.path).relative_to(root)), entry.stat(follow_symlinks=False).st_size)


def files(*, root: Path, limit: int = 200) -> list[FileRow]:
    """Regular files under ``root`` (links are not followed), names in order, at most ``limit``.

    The walk is lazy and stops at ``limit`` files, so a large sandbox costs no more than the rows
    shown. A missing ``root`` gives [].
    """
    return list(itertools.islice(_walk(root, root), max(0, limit)))


def records(*, db_path: Path, limit: int = 100) -> tuple[list[str], list[list[str]]]:
    """(column names, rows as strings) of the ``records`` table in ``db_path``, opened read-only."""
    if not db_path.exists():
        return [], []
    try:
        conn = app_sqlite.connect(db_path, read_only=True)
    except sqlite3.Error:
        return [], []
    try:
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        cur = conn.execute("SELECT * FROM records ORDER BY id LIMIT ?", (limit,))
        cols = [d[0] for d in cur.description]
        return cols, [[("" if v is None else str(v)[:1000]) for v in row] for row in cur.fetchall()]
    except sqlite3.Error:
        return [], []
    finally:
        conn.close()
