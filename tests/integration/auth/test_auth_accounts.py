"""Account management on real SQLite and PostgreSQL: first admin, invites, temporary passwords, roles."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.auth import (
    SYSTEM,
    AuthError,
    NotAllowed,
    Role,
    WrongCredentials,
    accept_invite,
    change_password,
    create_admin,
    create_invite,
    create_with_temporary_password,
    disable,
    enable,
    find_account,
    first_run_needed,
    list_accounts,
    resolve_session,
    set_role,
    sign_in,
)
from hitl_app.store.accounts import Invite
from hitl_app.store.tables import utcnow

PW = "correct horse 1"


async def test_first_run_creates_exactly_one_admin(engine):
    assert await first_run_needed(engine=engine) is True
    admin = await create_admin(engine=engine, email="Ada@Example.com", display_name="Ada", password=PW)
    assert admin.role is Role.ADMIN
    assert await first_run_needed(engine=engine) is False
    with pytest.raises(AuthError, match="already exists; sign in instead"):
        await create_admin(engine=engine, email="mallory@example.com", display_name="M", password=PW)


async def test_two_simultaneous_first_runs_make_one_admin(engine):
    results = await asyncio.gather(
        create_admin(engine=engine, email="a@example.com", display_name="A", password=PW),
        create_admin(engine=engine, email="b@example.com", display_name="B", password=PW),
        return_exceptions=True,
    )
    assert sum(not isinstance(r, BaseException) for r in results) == 1
    assert [a.role for a in await list_accounts(engine=engine)] == [Role.ADMIN]


async def test_create_admin_refuses_a_short_password_and_stays_open(engine):
    with pytest.raises(AuthError, match="at least 8 characters"):
        await create_admin(engine=engine, email="a@example.com", display_name="A", password="short")
    assert await first_run_needed(engine=engine) is True


async def test_email_is_unique_whatever_its_case(engine, make_account):
    await make_account(email="dana@example.com")
    with pytest.raises(AuthError, match="already exists"):
        await make_account(email="DANA@EXAMPLE.COM")


async def test_display_name_is_kept_as_plain_text(engine, make_account):
    who = await make_account(name="  <img src=x onerror=alert(1)>\u202e Dana\n ")
    assert who.display_name == "<img src=x onerror=alert(1)> Dana"
    assert (await find_account(engine=engine, email="dana@example.com")).display_name == who.display_name


async def test_invite_creates_the_account_once_with_its_role(engine, config):
    admin = await create_admin(engine=engine, email="ada@example.com", display_name="Ada", password=PW)
    token = await create_invite(engine=engine, email="Rev@Example.com", role=Role.REVIEWER, by=admin, config=config)
    rev = await accept_invite(engine=engine, token=token, display_name="Rex", password=PW)
    assert (rev.role, rev.email) == (Role.REVIEWER, "Rev@Example.com")
    assert await sign_in(engine=engine, email="rev@example.com", password=PW, client="", config=config)
    with pytest.raises(AuthError, match="not valid any more"):
        await accept_invite(engine=engine, token=token, display_name="Rex again", password=PW)


async def test_same_invite_accepted_twice_at_once_makes_one_account(engine, config):
    token = await create_invite(engine=engine, email="r@example.com", role=Role.MEMBER, by=SYSTEM, config=config)
    results = await asyncio.gather(
        accept_invite(engine=engine, token=token, display_name="One", password=PW),
        accept_invite(engine=engine, token=token, display_name="Two", password=PW),
        return_exceptions=True,
    )
    assert sum(not isinstance(r, BaseException) for r in results) == 1
    assert len(await list_accounts(engine=engine)) == 1


async def test_expired_or_unknown_invite_is_refused(engine, config):
    token = await create_invite(engine=engine, email="r@example.com", role=Role.MEMBER, by=SYSTEM, config=config)
    async with AsyncSession(engine) as s:
        await s.exec(update(Invite).values(expires_at=utcnow() - timedelta(seconds=1)))
        await s.commit()
    for t in (token, "made-up-token"):
        with pytest.raises(AuthError, match="not valid any more"):
            await accept_invite(engine=engine, token=t, display_name="R", password=PW)


async def test_invite_survives_a_refused_password(engine, config):
    token = await create_invite(engine=engine, email="r@example.com", role=Role.MEMBER, by=SYSTEM, config=config)
    with pytest.raises(AuthError, match="at least 8"):
        await accept_invite(engine=engine, token=token, display_name="R", password="short")
    assert (await accept_invite(engine=engine, token=token, display_name="R", password=PW)).role is Role.MEMBER


async def test_only_admins_manage_accounts(engine, config, make_account):
    member = await make_account(role=Role.MEMBER)
    reviewer = await make_account(email="rev@example.com", role=Role.REVIEWER)
    for by in (member, reviewer):
        with pytest.raises(NotAllowed, match="Only an admin"):
            await create_invite(engine=engine, email="x@example.com", role=Role.ADMIN, by=by, config=config)
        with pytest.raises(NotAllowed):
            await set_role(engine=engine, account_id=member.account_id, role=Role.ADMIN, by=by)
        with pytest.raises(NotAllowed):
            await disable(engine=engine, account_id=reviewer.account_id, by=by)


async def test_temporary_password_must_be_changed_and_the_change_ends_other_sessions(engine, config):
    who, temporary = await create_with_temporary_password(
        engine=engine, email="t@example.com", display_name="Tom", role=Role.MEMBER, by=SYSTEM
    )
    first = await sign_in(engine=engine, email="t@example.com", password=temporary, client="", config=config)
    other = await sign_in(engine=engine, email="t@example.com", password=temporary, client="", config=config)
    assert (await resolve_session(engine=engine, token=first, config=config)).must_change_password is True
    with pytest.raises(WrongCredentials):
        await change_password(engine=engine, account_id=who.account_id, current_password="nope", new_password=PW)
    await change_password(
        engine=engine, account_id=who.account_id, current_password=temporary, new_password=PW, keep_token=first
    )
    kept = await resolve_session(engine=engine, token=first, config=config)
    assert kept is not None and kept.must_change_password is False
    assert await resolve_session(engine=engine, token=other, config=config) is None
    with pytest.raises(WrongCredentials):
        await sign_in(engine=engine, email="t@example.com", password=temporary, client="", config=config)


async def test_set_role_shows_at_the_next_resolve(engine, config, make_account):
    who = await make_account()
    token = await sign_in(engine=engine, email="dana@example.com", password=PW, client="", config=config)
    await set_role(engine=engine, account_id=who.account_id, role=Role.REVIEWER, by=SYSTEM)
    assert (await resolve_session(engine=engine, token=token, config=config)).role is Role.REVIEWER


async def test_the_last_active_admin_cannot_be_demoted_or_disabled(engine):
    ada = await create_admin(engine=engine, email="ada@example.com", display_name="Ada", password=PW)
    with pytest.raises(AuthError, match="last active admin"):
        await set_role(engine=engine, account_id=ada.account_id, role=Role.MEMBER, by=ada)
    with pytest.raises(AuthError, match="last active admin"):
        await disable(engine=engine, account_id=ada.account_id, by=ada)


async def test_enable_lets_a_disabled_account_sign_in_again(engine, config, make_account):
    who = await make_account()
    await disable(engine=engine, account_id=who.account_id, by=SYSTEM)
    await enable(engine=engine, account_id=who.account_id, by=SYSTEM)
    assert await sign_in(engine=engine, email="dana@example.com", password=PW, client="", config=config)
