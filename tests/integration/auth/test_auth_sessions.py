"""Sign-in, sessions and rate limits on real SQLite and PostgreSQL databases."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import text, update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.auth import (
    SYSTEM,
    AccountDisabled,
    Role,
    TooManyAttempts,
    WrongCredentials,
    disable,
    resolve_session,
    sign_in,
    sign_out,
    sign_out_everywhere,
)
from hitl_app.auth.tokens import hash_token
from hitl_app.store.accounts import AuthSession
from hitl_app.store.sign_in_attempts import SignInAttempt
from hitl_app.store.tables import utcnow

PW = "correct horse 1"


async def _exec(engine, stmt):
    async with AsyncSession(engine) as s:
        await s.exec(stmt)
        await s.commit()


async def test_sign_in_returns_a_token_that_resolves_to_the_account(engine, config, make_account):
    dana = await make_account(role=Role.REVIEWER)
    token = await sign_in(engine=engine, email="dana@example.com", password=PW, client="10.0.0.1", config=config)
    who = await resolve_session(engine=engine, token=token, config=config)
    assert who is not None
    assert (who.account_id, who.display_name, who.role) == (dana.account_id, "Dana", Role.REVIEWER)


async def test_email_compares_case_insensitively(engine, config, make_account):
    await make_account(email="Dana@Example.com")
    token = await sign_in(engine=engine, email="  DANA@example.COM ", password=PW, client="", config=config)
    assert await resolve_session(engine=engine, token=token, config=config) is not None


async def test_wrong_password_and_unknown_email_give_the_same_message(engine, config, make_account):
    await make_account()
    with pytest.raises(WrongCredentials, match="^Wrong email or password$"):
        await sign_in(engine=engine, email="dana@example.com", password="nope nope", client="", config=config)
    with pytest.raises(WrongCredentials, match="^Wrong email or password$"):
        await sign_in(engine=engine, email="nobody@example.com", password=PW, client="", config=config)


async def test_only_a_hash_of_the_token_is_stored(engine, config, make_account):
    await make_account()
    token = await sign_in(engine=engine, email="dana@example.com", password=PW, client="", config=config)
    async with AsyncSession(engine) as s:
        stored = (await s.exec(select(AuthSession.token_hash))).all()
    assert stored == [hash_token(token)] and token not in stored


async def test_unknown_and_garbage_tokens_resolve_to_nobody(engine, config):
    assert await resolve_session(engine=engine, token="", config=config) is None
    assert await resolve_session(engine=engine, token="x" * 5000, config=config) is None
    assert await resolve_session(engine=engine, token="not-a-session", config=config) is None


async def test_expired_session_resolves_to_nobody_and_is_deleted(engine, config, make_account):
    await make_account()
    token = await sign_in(engine=engine, email="dana@example.com", password=PW, client="", config=config)
    await _exec(engine, update(AuthSession).values(expires_at=utcnow() - timedelta(seconds=1)))
    assert await resolve_session(engine=engine, token=token, config=config) is None
    async with AsyncSession(engine) as s:
        assert (await s.exec(select(AuthSession))).all() == []


async def test_activity_slides_the_expiry(engine, config, make_account):
    await make_account()
    token = await sign_in(engine=engine, email="dana@example.com", password=PW, client="", config=config)
    soon = utcnow() + timedelta(seconds=30)
    await _exec(engine, update(AuthSession).values(expires_at=soon, last_seen_at=utcnow() - timedelta(minutes=59)))
    assert await resolve_session(engine=engine, token=token, config=config) is not None
    async with AsyncSession(engine) as s:
        row = (await s.exec(select(AuthSession))).one()
    expires = row.expires_at if row.expires_at.tzinfo else row.expires_at.replace(tzinfo=soon.tzinfo)
    assert expires > utcnow() + config.session_ttl - timedelta(minutes=1)


async def test_sign_out_ends_only_that_session(engine, config, make_account):
    await make_account()
    laptop = await sign_in(engine=engine, email="dana@example.com", password=PW, client="", config=config)
    phone = await sign_in(engine=engine, email="dana@example.com", password=PW, client="", config=config)
    assert await sign_out(engine=engine, token=laptop) is True
    assert await resolve_session(engine=engine, token=laptop, config=config) is None
    assert await resolve_session(engine=engine, token=phone, config=config) is not None
    assert await sign_out(engine=engine, token=laptop) is False


async def test_sign_out_everywhere_ends_every_session_of_the_account_only(engine, config, make_account):
    dana = await make_account()
    await make_account(email="eve@example.com", name="Eve")
    tokens = [await sign_in(engine=engine, email="dana@example.com", password=PW, client="", config=config) for _ in range(3)]
    eve = await sign_in(engine=engine, email="eve@example.com", password=PW, client="", config=config)
    assert await sign_out_everywhere(engine=engine, account_id=dana.account_id) == 3
    for t in tokens:
        assert await resolve_session(engine=engine, token=t, config=config) is None
    assert await resolve_session(engine=engine, token=eve, config=config) is not None


async def test_disabling_ends_open_sessions_and_refuses_sign_in(engine, config, make_account):
    dana = await make_account()
    token = await sign_in(engine=engine, email="dana@example.com", password=PW, client="", config=config)
    assert await disable(engine=engine, account_id=dana.account_id, by=SYSTEM) == 1
    assert await resolve_session(engine=engine, token=token, config=config) is None
    with pytest.raises(AccountDisabled, match="^This account is disabled$"):
        await sign_in(engine=engine, email="dana@example.com", password=PW, client="", config=config)
    with pytest.raises(WrongCredentials):  # without the password, a disabled account looks like any other
        await sign_in(engine=engine, email="dana@example.com", password="wrong pass", client="", config=config)


async def test_a_session_of_an_account_disabled_behind_its_back_stops_resolving(engine, config, make_account):
    dana = await make_account()
    token = await sign_in(engine=engine, email="dana@example.com", password=PW, client="", config=config)
    await _exec(engine, text("UPDATE accounts SET disabled = true WHERE id = :i").bindparams(i=dana.account_id))
    assert await resolve_session(engine=engine, token=token, config=config) is None


async def test_rate_limit_per_account_refuses_even_the_right_password(engine, config, make_account):
    await make_account()
    for _ in range(config.max_failures_per_account):
        with pytest.raises(WrongCredentials):
            await sign_in(engine=engine, email="dana@example.com", password="guess 123", client="", config=config)
    with pytest.raises(TooManyAttempts, match=r"^Too many attempts; try again in 10 minutes$"):
        await sign_in(engine=engine, email="DANA@example.com", password=PW, client="", config=config)


async def test_rate_limit_per_address_spans_emails(engine, config, make_account):
    await make_account()
    for i in range(config.max_failures_per_address):
        with pytest.raises(WrongCredentials):
            await sign_in(engine=engine, email=f"u{i}@example.com", password="guess 123", client="10.0.0.9", config=config)
    with pytest.raises(TooManyAttempts):
        await sign_in(engine=engine, email="dana@example.com", password=PW, client="10.0.0.9", config=config)
    assert await sign_in(engine=engine, email="dana@example.com", password=PW, client="10.0.0.10", config=config)


async def test_rate_limit_lifts_when_the_failures_leave_the_window(engine, config, make_account):
    await make_account()
    for _ in range(config.max_failures_per_account):
        with pytest.raises(WrongCredentials):
            await sign_in(engine=engine, email="dana@example.com", password="guess 123", client="", config=config)
    old = utcnow() - config.failure_window - timedelta(seconds=1)
    await _exec(engine, update(SignInAttempt).where(col(SignInAttempt.succeeded).is_(False)).values(at=old))
    assert await sign_in(engine=engine, email="dana@example.com", password=PW, client="", config=config)


async def test_a_successful_sign_in_clears_the_account_failures(engine, config, make_account):
    await make_account()
    for _ in range(config.max_failures_per_account - 1):
        with pytest.raises(WrongCredentials):
            await sign_in(engine=engine, email="dana@example.com", password="guess 123", client="", config=config)
    await sign_in(engine=engine, email="dana@example.com", password=PW, client="", config=config)
    for _ in range(config.max_failures_per_account - 1):
        with pytest.raises(WrongCredentials):
            await sign_in(engine=engine, email="dana@example.com", password="guess 123", client="", config=config)
    assert await sign_in(engine=engine, email="dana@example.com", password=PW, client="", config=config)


async def test_an_active_session_still_ends_at_its_absolute_lifetime(engine, config, make_account):
    await make_account()
    token = await sign_in(engine=engine, email="dana@example.com", password=PW, client="", config=config)
    signed_in_long_ago = utcnow() - config.session_max_age - timedelta(seconds=1)
    # active all along: last seen two minutes ago, and the sliding expiry still ahead
    await _exec(engine, update(AuthSession).values(created_at=signed_in_long_ago,
                                                   last_seen_at=utcnow() - timedelta(minutes=2)))
    assert await resolve_session(engine=engine, token=token, config=config) is None


async def test_sliding_never_moves_the_expiry_past_the_absolute_lifetime(engine, config, make_account):
    await make_account()
    token = await sign_in(engine=engine, email="dana@example.com", password=PW, client="", config=config)
    created = utcnow() - config.session_max_age + timedelta(minutes=5)
    await _exec(engine, update(AuthSession).values(created_at=created, last_seen_at=utcnow() - timedelta(minutes=2)))
    assert await resolve_session(engine=engine, token=token, config=config) is not None
    async with AsyncSession(engine) as s:
        row = (await s.exec(select(AuthSession))).one()
    expires = row.expires_at if row.expires_at.tzinfo else row.expires_at.replace(tzinfo=created.tzinfo)
    assert expires <= created + config.session_max_age


async def test_a_stranger_guessing_from_another_address_does_not_lock_the_person_out(engine, config, make_account):
    await make_account()
    for _ in range(config.max_failures_per_account):
        with pytest.raises(WrongCredentials):
            await sign_in(engine=engine, email="dana@example.com", password="guess 123", client="203.0.113.9", config=config)
    with pytest.raises(TooManyAttempts):
        await sign_in(engine=engine, email="dana@example.com", password=PW, client="203.0.113.9", config=config)
    assert await sign_in(engine=engine, email="dana@example.com", password=PW, client="10.0.0.5", config=config)
