"""A fresh PostgreSQL database per test (``hitl_test_<random>``), dropped afterwards.

The server is ``HITL_TEST_PG`` (default ``postgresql://postgres@127.0.0.1:5432/postgres``, the
one CI starts). If it cannot be reached the test FAILS with a message saying so: PostgreSQL is a
supported backend, and a missing server must not turn into a silently skipped suite.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

import psycopg
import pytest

ADMIN_URL = os.environ.get("HITL_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def _admin() -> psycopg.Connection:
    try:
        return psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"PostgreSQL is not reachable at {ADMIN_URL} ({' '.join(str(exc).split())[:200]}). "
            "Start it (.ci/run does) or point HITL_TEST_PG at one; these tests do not skip.",
            pytrace=False,
        )


@contextlib.contextmanager
def fresh_database() -> Iterator[str]:
    """Create ``hitl_test_<hex>`` and yield its URL; drop it (closing stray connections) on exit."""
    name = f"hitl_test_{uuid.uuid4().hex[:12]}"
    with _admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = ADMIN_URL.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        with _admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
