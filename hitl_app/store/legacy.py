"""Threads made before accounts existed: the account that signs in from their browser claims them.

Before accounts, a thread's owner was a random id in one browser's localStorage (a UUID). The
first account that signs in from that browser takes over everything that id owned: its threads
(so their audit records, which follow the thread's owner), its outbox mails and tool effects, and
its demo workspace (files sandbox and demo records database, moved to the account's folder when
the account has none yet). Account owners are ``str(account_id)`` (digits), never a UUID, so a
forged browser id cannot name an account's threads.
"""

# Tested by: tests/integration/ui/test_auth_websocket.py

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.owners import owner_space
from hitl_app.store.tables import OutboxMail, ThreadRecord, ToolEffect

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Claimed:
    """What a claim moved: ``threads`` rows re-owned, and whether the workspace folder/db moved."""

    threads: int
    workspace_moved: bool


def is_browser_id(value: object) -> bool:
    """True for a legacy browser id: a UUID string (account owners are digits)."""
    if not isinstance(value, str) or len(value) != 36:
        return False
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _move_workspace(*, files_root: Path, demo_db_path: Path, old: str, new: str) -> bool:
    """Move ``old``'s files folder and demo database to ``new``'s places when those do not exist."""
    src = owner_space(files_root=files_root, demo_db_path=demo_db_path, owner=old)
    dst = owner_space(files_root=files_root, demo_db_path=demo_db_path, owner=new)
    moved = False
    if src.files_dir.is_dir() and not dst.files_dir.exists():
        src.files_dir.rename(dst.files_dir)
        moved = True
    if src.demo_db.is_file() and not dst.demo_db.exists():
        dst.demo_db.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{src.demo_db}{suffix}")
            if part.exists():
                part.rename(Path(f"{dst.demo_db}{suffix}"))
        moved = True
    return moved


async def claim_browser_threads(
    *, engine: AsyncEngine, browser_id: str, owner: str, files_root: Path, demo_db_path: Path
) -> Claimed:
    """Give everything the legacy ``browser_id`` owns to ``owner`` (an account's owner string).

    Idempotent: a second call finds nothing left. Nothing happens unless ``browser_id`` is a UUID
    and ``owner`` is not one.

    Returns:
        ``Claimed(threads, workspace_moved)``.
    """
    if not is_browser_id(browser_id) or is_browser_id(owner) or not owner:
        return Claimed(0, False)
    old_key = owner_space(files_root=files_root, demo_db_path=demo_db_path, owner=browser_id).key
    new_key = owner_space(files_root=files_root, demo_db_path=demo_db_path, owner=owner).key
    async with AsyncSession(engine) as s:
        found = (await s.exec(select(ThreadRecord.thread_id).where(ThreadRecord.owner == browser_id).limit(1))).first()
        if found is None:  # the usual case: read only, no write lock taken
            return Claimed(0, False)
        result = await s.exec(update(ThreadRecord).where(col(ThreadRecord.owner) == browser_id).values(owner=owner))
        threads = int(result.rowcount or 0)
        for table in (OutboxMail, ToolEffect):
            await s.exec(update(table).where(col(table.owner) == old_key).values(owner=new_key))
        await s.commit()
    moved = await asyncio.to_thread(
        _move_workspace, files_root=files_root, demo_db_path=demo_db_path, old=browser_id, new=owner
    )
    if threads or moved:
        log.info("claimed %d legacy thread(s) for account owner %s (workspace moved: %s)", threads, owner, moved)
    return Claimed(threads, moved)
