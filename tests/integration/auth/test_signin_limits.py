"""Sign-in limits under concurrency and on every route that hashes or checks a password (real
SQLite and PostgreSQL; several engines stand for several app workers)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from hitl_app.auth import TooManyAttempts, WrongCredentials, create_admin, sign_in
from hitl_app.auth.http import auth_app
from hitl_app.auth.passwords import ARGON2_CONCURRENCY, argon2_stats, hash_password, reset_argon2_peak
from hitl_app.auth.text import MAX_PASSWORD
from hitl_app.store.db import make_engines

PW = "correct horse 1"


async def test_forty_concurrent_wrong_guesses_check_at_most_the_limit(engine, config, make_account, database_url):
    await make_account()
    workers = [make_engines(database_url) for _ in range(3)]  # three "workers", each its own pool
    engines = [engine] + [w.async_ for w in workers]
    try:
        async def guess(i: int) -> str:
            try:
                await sign_in(engine=engines[i % len(engines)], email="dana@example.com", password=f"guess {i:03d}",
                              client="10.0.0.7", config=config)
            except WrongCredentials:
                return "checked"
            except TooManyAttempts:
                return "429"
            return "signed in"

        results = await asyncio.gather(*(guess(i) for i in range(40)))
    finally:
        for w in workers:
            await w.async_.dispose()
            w.sync.dispose()
    assert results.count("checked") <= config.max_failures_per_account, results
    assert results.count("429") == 40 - results.count("checked")


@pytest.fixture
def http(engine, config):
    """An HTTP client on the real auth routes (one client address: httpx's ASGI transport's)."""
    app = auth_app(get_engine=lambda: engine, config=config)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


async def test_first_run_after_setup_is_refused_without_hashing_and_then_limited(engine, config, http):
    await create_admin(engine=engine, email="root@example.com", display_name="Root", password=PW)
    before = argon2_stats().runs
    async with http as c:
        answers = [
            (await c.post("/auth/first-run", json={"email": "x@y.z", "name": "X", "password": "a" * 1000})).status_code
            for _ in range(config.max_failures_per_address + 2)
        ]
    assert argon2_stats().runs == before, "an already set-up app hashed a first-run password"
    assert answers[0] == 400 and answers[-1] == 429, answers


async def test_a_bogus_invite_token_is_refused_without_hashing_and_then_limited(engine, config, http):
    before = argon2_stats().runs
    async with http as c:
        answers = [
            (await c.post("/auth/invite", json={"token": f"bogus{i}", "name": "X", "password": PW})).status_code
            for i in range(config.max_failures_per_address + 2)
        ]
    assert argon2_stats().runs == before, "an unknown invite token made the server hash a password"
    assert answers[0] == 400 and answers[-1] == 429, answers


async def test_concurrent_password_work_is_bounded_in_the_process():
    reset_argon2_peak()
    await asyncio.gather(*(hash_password(f"password {i}") for i in range(8)))
    assert 1 <= argon2_stats().peak <= ARGON2_CONCURRENCY


async def test_an_oversized_auth_body_is_refused_with_413(engine, config, make_account, http):
    await make_account()
    huge = {"email": "dana@example.com", "password": "x" * 2_000_000}
    async with http as c:
        as_json = await c.post("/auth/sign-in", json=huge)
        as_form = await c.post("/auth/sign-in", data=huge)
        fine = await c.post("/auth/sign-in", json={"email": "dana@example.com", "password": PW})
    assert (as_json.status_code, as_form.status_code, fine.status_code) == (413, 413, 200)


async def test_a_password_over_the_maximum_is_refused_before_it_is_checked(engine, config, make_account, http):
    await make_account()
    before = argon2_stats().runs
    async with http as c:
        r = await c.post("/auth/sign-in", json={"email": "dana@example.com", "password": "p" * (MAX_PASSWORD + 1)})
    assert r.status_code == 401 and argon2_stats().runs == before


async def test_guesses_at_the_current_password_are_limited(engine, config, make_account, http):
    await make_account()
    async with http as c:
        await c.post("/auth/sign-in", json={"email": "dana@example.com", "password": PW})
        answers = [
            (await c.post("/auth/change-password", json={"current": f"guess {i:03d}", "password": "new password 9"})).status_code
            for i in range(config.max_failures_per_account + 2)
        ]
        right = await c.post("/auth/change-password", json={"current": PW, "password": "new password 9"})
    assert answers[0] == 400 and answers[-1] == 429, answers
    assert right.status_code == 429  # even the right one, until the window passes
