"""``python -m hitl_app users ...`` run as a subprocess against a temp SQLite database."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hitl_app.auth import AuthConfig, resolve_session, sign_in
from hitl_app.store.db import make_engines

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def cli(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'hitl.sqlite'}"
    env = {**os.environ, "DATABASE_URL": url, "HITL_DATA_DIR": str(tmp_path)}

    def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "hitl_app", "users", *args], input=stdin, capture_output=True,
            text=True, env=env, cwd=ROOT, timeout=60,
        )

    run.url = url  # type: ignore[attr-defined]
    return run


def _sign_in(url: str, email: str, password: str):
    async def go():
        engines = make_engines(url)
        try:
            token = await sign_in(engine=engines.async_, email=email, password=password, client="", config=AuthConfig())
            return await resolve_session(engine=engines.async_, token=token, config=AuthConfig())
        finally:
            await engines.async_.dispose()

    return asyncio.run(go())


@pytest.mark.slow  # a dozen CLI processes, ~1 s each
def test_users_add_list_set_role_disable(cli):
    added = cli("add", "Ada@Example.com", "--name", "Ada", "--role", "admin", "--password-stdin", stdin="correct horse 1\n")
    assert added.returncode == 0, added.stderr
    assert "added Ada@Example.com (admin)" in added.stdout
    assert cli(
        "add", "rex@example.com", "--name", "Rex", "--role", "member", "--password-stdin", stdin="rex password\n"
    ).returncode == 0
    role = cli("set-role", "REX@example.com", "reviewer")
    assert role.returncode == 0 and "is now reviewer" in role.stdout
    listed = cli("list").stdout.splitlines()
    assert listed[1].split("\t")[1:4] == ["Ada@Example.com", "admin", "active"]
    assert listed[2].split("\t")[1:4] == ["rex@example.com", "reviewer", "active"]
    who = _sign_in(cli.url, "ada@example.com", "correct horse 1")
    assert who is not None and who.display_name == "Ada"
    assert cli("disable", "rex@example.com").returncode == 0
    assert "disabled" in cli("list").stdout.splitlines()[2]


def test_temporary_password_is_printed_and_must_be_changed(cli):
    out = cli("add", "tom@example.com", "--name", "Tom", "--temporary")
    assert out.returncode == 0, out.stderr
    temporary = out.stdout.strip().rsplit(": ", 1)[1]
    who = _sign_in(cli.url, "tom@example.com", temporary)
    assert who is not None and who.must_change_password is True


@pytest.mark.slow  # a dozen CLI processes, ~1 s each
def test_refusals_exit_1_with_the_reason(cli):
    assert cli("add", "a@example.com", "--name", "A", "--password-stdin", stdin="short\n").stderr.strip() == (
        "error: Use at least 8 characters for the password"
    )
    bad_role = cli("add", "a@example.com", "--name", "A", "--role", "owner", "--temporary")
    assert bad_role.returncode == 1 and "member, reviewer or admin" in bad_role.stderr
    missing = cli("disable", "ghost@example.com")
    assert missing.returncode == 1 and "No account with email" in missing.stderr
    assert cli("add", "a@example.com", "--name", "A").returncode == 2  # no way to set a password given
