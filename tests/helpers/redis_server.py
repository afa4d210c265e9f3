"""The real Redis for bus tests (``HITL_TEST_REDIS``, default ``redis://127.0.0.1:6379/0``).

If it cannot be reached the test FAILS with a message saying so: the Redis bus is a supported
backend, and a missing server must not turn into a silently skipped suite.
"""

from __future__ import annotations

import os
import uuid

import pytest
import redis

REDIS_URL = os.environ.get("HITL_TEST_REDIS", "redis://127.0.0.1:6379/0")


def require_redis() -> str:
    """``REDIS_URL`` after a PING; fails the test when Redis is unreachable."""
    try:
        with redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3) as client:
            client.ping()
    except redis.exceptions.RedisError as exc:
        pytest.fail(
            f"Redis is not reachable at {REDIS_URL} ({exc}); start it (.ci/run does). These tests do not skip.", pytrace=False
        )
    return REDIS_URL


def unique_prefix() -> str:
    """A key prefix no other test uses (``t<hex>:``)."""
    return f"t{uuid.uuid4().hex[:10]}:"


def clients_named(name: str) -> int:
    """How many Redis connections are open under client name ``name`` (CLIENT LIST)."""
    with redis.Redis.from_url(REDIS_URL, decode_responses=True) as admin:
        return sum(1 for c in admin.client_list() if c.get("name") == name)


def keys_without_ttl(prefix: str) -> list[str]:
    """Keys under ``prefix`` that would live forever (TTL -1), except the one generation counter."""
    with redis.Redis.from_url(REDIS_URL, decode_responses=True) as admin:
        return [k for k in admin.scan_iter(f"{prefix}*") if admin.ttl(k) == -1 and k != f"{prefix}generation"]
