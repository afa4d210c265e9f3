"""Probing a demo database (``DemoWorkspace``'s per-owner SQLite file) from a test."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def write_in_progress(path: Path | str) -> bool:
    """True while another connection holds ``path``'s write lock: an UPDATE takes it as it starts and
    keeps it until it commits or rolls back. The probe's own try never waits and lets go at once.

    Tests use it to know that an approved write really runs in its worker thread: ``TOOL_WORK.busy``
    alone is not that, since PostgreSQL's checkpointer loads a resume's writes in worker threads of
    the same run before the call starts (a Stop then lands before anything ran)."""
    probe = sqlite3.connect(path, timeout=0)
    try:
        probe.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError:
        return True
    else:
        probe.rollback()
        return False
    finally:
        probe.close()
