"""A locked or unreachable database is refused plainly whatever its driver (``threads/refusals.py``), and the
app on its embedded defaults never loads the PostgreSQL driver (it would cost every server process ~9 MB)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hitl_app.errors import ThreadError
from hitl_app.threads.refusals import refused_when_unavailable
from tests.helpers.paths import ROOT


def test_the_app_on_sqlite_does_not_load_the_postgresql_driver(tmp_path):
    probe = "import sys, hitl_app.hitl_app; print('psycopg' in sys.modules)"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | {"HITL_DATA_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"


async def test_a_postgresql_or_redis_connection_error_is_refused_as_unavailable():
    import psycopg
    import redis.exceptions

    for error in (psycopg.OperationalError("server closed the connection"), redis.exceptions.ConnectionError("refused"),
                  redis.exceptions.TimeoutError("timed out")):
        @refused_when_unavailable
        async def step(error=error) -> None:
            raise error

        with pytest.raises(ThreadError) as raised:
            await step()
        assert raised.value.code == "db_unavailable" and "nothing was sent" in str(raised.value)


async def test_other_errors_pass_through():
    @refused_when_unavailable
    async def step() -> None:
        raise ValueError("a bug, not an outage")

    with pytest.raises(ValueError):
        await step()
