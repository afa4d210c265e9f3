"""Invites after they were made, on real SQLite and PostgreSQL: the admin's pending list, revoking,
and what a link says before its form is filled in (used, expired, revoked, unknown)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.auth import (
    SYSTEM,
    AuthError,
    NotAllowed,
    Role,
    accept_invite,
    add_account,
    check_invite,
    create_admin,
    create_invite,
    create_with_temporary_password,
    disable,
    find_account,
    invite_refusal,
    pending_invites,
    revoke_invite,
    set_role,
)
from hitl_app.auth.invites import INVITE_EXPIRED, INVITE_HAS_ACCOUNT, INVITE_REVOKED, INVITE_UNKNOWN, INVITE_USED
from hitl_app.store.accounts import Account
from hitl_app.store.tables import utcnow

PW = "correct horse 1"


async def test_pending_invites_list_who_role_and_expiry_and_leave_out_used_ones(engine, config):
    admin = await create_admin(engine=engine, email="ada@example.com", display_name="Ada", password=PW)
    used = await create_invite(engine=engine, email="used@example.com", role=Role.MEMBER, by=admin, config=config)
    await create_invite(engine=engine, email="Rev@Example.com", role=Role.REVIEWER, by=admin, config=config)
    await accept_invite(engine=engine, token=used, display_name="Used", password=PW)
    [row] = await pending_invites(engine=engine, by=admin)
    assert (row.email, row.role, row.invited_by) == ("Rev@Example.com", Role.REVIEWER, "Ada")
    assert timedelta(hours=1, minutes=59) < row.expires_at - utcnow() <= timedelta(hours=2)
    assert await pending_invites(engine=engine, by=admin, now=utcnow() + timedelta(hours=3)) == [], "expired"


async def test_a_revoked_invite_stops_working_and_leaves_the_list(engine, config):
    token = await create_invite(engine=engine, email="r@example.com", role=Role.MEMBER, by=SYSTEM, config=config)
    assert await invite_refusal(engine=engine, token=token) == ""
    [row] = await pending_invites(engine=engine, by=SYSTEM)
    assert await revoke_invite(engine=engine, invite_id=row.invite_id, by=SYSTEM) == "r@example.com"
    assert await pending_invites(engine=engine, by=SYSTEM) == []
    assert await invite_refusal(engine=engine, token=token) == INVITE_REVOKED
    with pytest.raises(AuthError, match="not valid any more"):
        await accept_invite(engine=engine, token=token, display_name="R", password=PW)
    with pytest.raises(AuthError, match="no longer pending"):
        await revoke_invite(engine=engine, invite_id=row.invite_id, by=SYSTEM)


async def test_a_link_says_why_it_cannot_be_used(engine, config):
    token = await create_invite(engine=engine, email="r@example.com", role=Role.MEMBER, by=SYSTEM, config=config)
    later = utcnow() + timedelta(hours=3)
    assert await invite_refusal(engine=engine, token=token, now=later) == INVITE_EXPIRED
    assert await invite_refusal(engine=engine, token="made-up-token") == INVITE_UNKNOWN
    await accept_invite(engine=engine, token=token, display_name="R", password=PW)
    assert await invite_refusal(engine=engine, token=token) == INVITE_USED


async def test_only_an_admin_lists_or_revokes_invites(engine, config, make_account):
    await create_invite(engine=engine, email="r@example.com", role=Role.MEMBER, by=SYSTEM, config=config)
    [row] = await pending_invites(engine=engine, by=SYSTEM)
    reviewer = await make_account(email="rev@example.com", role=Role.REVIEWER)
    with pytest.raises(NotAllowed):
        await pending_invites(engine=engine, by=reviewer)
    with pytest.raises(NotAllowed):
        await revoke_invite(engine=engine, invite_id=row.invite_id, by=reviewer)
    assert await invite_refusal(engine=engine, token="x") == INVITE_UNKNOWN


async def test_a_second_invite_for_the_same_email_in_another_case_is_refused(engine, config):
    await create_invite(engine=engine, email="dup@example.com", role=Role.MEMBER, by=SYSTEM, config=config)
    with pytest.raises(AuthError, match="already a pending invite for DUP@example.com"):
        await create_invite(engine=engine, email="DUP@example.com", role=Role.REVIEWER, by=SYSTEM, config=config)
    [row] = await pending_invites(engine=engine, by=SYSTEM)
    assert (row.email, row.role) == ("dup@example.com", Role.MEMBER)
    await revoke_invite(engine=engine, invite_id=row.invite_id, by=SYSTEM)  # revoked: a new one may go out
    await create_invite(engine=engine, email="DUP@example.com", role=Role.REVIEWER, by=SYSTEM, config=config)


async def test_an_invite_whose_email_got_an_account_is_not_pending_and_its_link_says_so(engine, config):
    token = await create_invite(engine=engine, email="CASE@example.com", role=Role.MEMBER, by=SYSTEM, config=config)
    assert await check_invite(engine=engine, token=token) == ("", "CASE@example.com")  # the join page shows whom it is for
    await create_with_temporary_password(
        engine=engine, email="case@example.com", display_name="Case", role=Role.MEMBER, by=SYSTEM
    )
    assert await pending_invites(engine=engine, by=SYSTEM) == []
    refusal, email = await check_invite(engine=engine, token=token)
    assert refusal == INVITE_HAS_ACCOUNT.format(email="CASE@example.com") and email == "CASE@example.com"
    assert "can't be used" in refusal


@pytest.mark.parametrize("removal", ["disable", "demote"])
async def test_an_admin_removed_takes_their_pending_invites_along(engine, config, removal):
    await create_admin(engine=engine, email="ada@example.com", display_name="Ada", password=PW)
    rita = await add_account(engine=engine, email="rita@example.com", display_name="Rita", role=Role.ADMIN, password=PW,
                             by=SYSTEM)
    token = await create_invite(engine=engine, email="backdoor@example.com", role=Role.ADMIN, by=rita, config=config)
    kept = await create_invite(engine=engine, email="new@example.com", role=Role.MEMBER, by=SYSTEM, config=config)
    if removal == "disable":
        await disable(engine=engine, account_id=rita.account_id, by=SYSTEM)
    else:
        await set_role(engine=engine, account_id=rita.account_id, role=Role.MEMBER, by=SYSTEM)
    assert [r.email for r in await pending_invites(engine=engine, by=SYSTEM)] == ["new@example.com"]
    with pytest.raises(AuthError, match="not valid any more"):
        await accept_invite(engine=engine, token=token, display_name="Back door", password=PW)
    assert await find_account(engine=engine, email="backdoor@example.com") is None
    assert (await accept_invite(engine=engine, token=kept, display_name="New", password=PW)).role is Role.MEMBER


async def test_an_invite_whose_maker_can_no_longer_invite_is_refused_at_accept(engine, config):
    rita = await add_account(engine=engine, email="rita@example.com", display_name="Rita", role=Role.ADMIN, password=PW,
                             by=SYSTEM)
    token = await create_invite(engine=engine, email="backdoor@example.com", role=Role.ADMIN, by=rita, config=config)
    async with AsyncSession(engine) as s:  # demoted by another path (single sign-on's role claim, say)
        await s.exec(update(Account).where(col(Account.id) == rita.account_id).values(role="member"))
        await s.commit()
    with pytest.raises(AuthError, match="not valid any more"):
        await accept_invite(engine=engine, token=token, display_name="Back door", password=PW)
    assert await invite_refusal(engine=engine, token=token) != ""
