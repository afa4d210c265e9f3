"""Refusals shared by the thread service's verbs: a database or bus that does not answer, and a
malformed thread id."""

# Tested by: tests/integration/app/test_faults.py - the locked database refusal

from __future__ import annotations

import functools
import logging
import sqlite3
import uuid
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from psycopg import OperationalError as PgOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.exc import InterfaceError, OperationalError

from hitl_app.errors import ThreadError

log = logging.getLogger("hitl_app.threads")

UNAVAILABLE = (
    OperationalError, InterfaceError, sqlite3.OperationalError, PgOperationalError, OSError, RedisConnectionError,
    RedisTimeoutError,
)
"""Errors of a locked or unreachable database or message bus."""

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
        except UNAVAILABLE as exc:
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
