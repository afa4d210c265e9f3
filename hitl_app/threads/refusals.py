"""Refusals shared by the thread service's verbs: a database or bus that does not answer, and a
malformed thread id."""

# Tested by: tests/integration/app/test_faults.py - the locked database refusal; tests/unit/threads/test_refusals_drivers.py

from __future__ import annotations

import functools
import logging
import sqlite3
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from sqlalchemy.exc import InterfaceError, OperationalError

from hitl_app.errors import ThreadError

log = logging.getLogger("hitl_app.threads")

UNAVAILABLE: tuple[type[BaseException], ...] = (OperationalError, InterfaceError, sqlite3.OperationalError, OSError)
"""Errors of a locked or unreachable database, whatever the driver (SQLAlchemy wraps them), or socket."""


def unavailable_errors() -> tuple[type[BaseException], ...]:
    """``UNAVAILABLE`` plus the drivers' own: psycopg's ``OperationalError`` and Redis's connection and
    timeout errors, for the drivers this process has loaded. A driver that was never imported cannot have
    raised, so it is not imported here: on the embedded defaults (SQLite) psycopg is never loaded, which
    saves each server process ~8.5 MB and ~70 ms at start (bench/README.md, round 13). A module still
    being imported (another thread) may lack the class yet; it is skipped then."""
    errors = list(UNAVAILABLE)
    for module, names in (("psycopg", ("OperationalError",)), ("redis.exceptions", ("ConnectionError", "TimeoutError"))):
        if (loaded := sys.modules.get(module)) is not None:
            errors += [cls for name in names if isinstance(cls := getattr(loaded, name, None), type)]
    return tuple(errors)


P = ParamSpec("P")
R = TypeVar("R")


def refused_when_unavailable(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Turn a locked or unreachable database/bus inside ``fn`` into ThreadError("db_unavailable").

    Only for steps before anything was claimed or started, so "nothing was sent" is true.
    """

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except unavailable_errors() as exc:
            log.warning("database or bus unavailable: %s", type(exc).__name__)
            raise ThreadError(
                "The database is busy or unreachable right now; nothing was sent. Try again in a moment.",
                code="db_unavailable",
            ) from exc

    return wrapper


def is_uuid4(value: str) -> bool:
    """True for a version-4 UUID in its 36-character text form (a thread id)."""
    try:
        return uuid.UUID(value).version == 4 and len(value) == 36
    except (ValueError, AttributeError, TypeError):
        return False
