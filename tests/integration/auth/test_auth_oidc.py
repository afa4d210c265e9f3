"""Single sign-on end to end: the code flow with PKCE against a real OIDC provider on loopback."""

from __future__ import annotations

import httpx
import pytest
from joserfc.jwk import RSAKey

from hitl_app.auth import SYSTEM, Role, disable, find_account, list_accounts, resolve_session, set_role, sign_in
from hitl_app.auth.cookie import SESSION_COOKIE
from hitl_app.auth.http import OIDC_COOKIE, auth_app
from hitl_app.auth.oidc import OidcClient, OidcSettings
from tests.helpers.oidc_provider import OidcTestProvider

PW = "correct horse 1"
USER = {"sub": "u-42", "email": "Sam@Example.com", "email_verified": True, "name": "Sam <Ops>", "groups": ["reviewer"]}


@pytest.fixture
def provider():
    with OidcTestProvider(client_id="hitl", client_secret="s3cret", user=USER) as p:
        yield p


def _app(engine, config, provider, role_claim=None):
    oidc = OidcClient(OidcSettings(provider.issuer, "hitl", "s3cret", role_claim))
    return auth_app(get_engine=lambda: engine, config=config, oidc=oidc)


async def _flow(app) -> tuple[httpx.Response, httpx.AsyncClient]:
    """Browser: app login -> provider authorize (real HTTP) -> app callback. Returns the last answer."""
    browser = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
    login = await browser.get("/auth/oidc/login")
    assert login.status_code == 302 and OIDC_COOKIE in login.cookies
    async with httpx.AsyncClient() as net:
        approved = await net.get(login.headers["location"])
    assert approved.status_code == 302, approved.text
    callback = approved.headers["location"]
    assert callback.startswith("http://testserver/auth/oidc/callback?")
    return await browser.get(callback), browser


async def test_code_flow_creates_a_linked_account_and_a_session(engine, config, provider):
    done, browser = await _flow(_app(engine, config, provider))
    # a page that refreshes to "/" by itself (a same-site navigation, so the Strict cookie goes along)
    assert done.status_code == 200 and 'http-equiv="refresh" content="0;url=/"' in done.text
    assert '<html lang="en">' in done.text  # a page without a language fails axe's html-has-lang (serious)
    who = await resolve_session(engine=engine, token=browser.cookies[SESSION_COOKIE], config=config)
    assert (who.email, who.display_name, who.role) == ("Sam@Example.com", "Sam <Ops>", Role.MEMBER)
    assert provider.token_requests == 1
    again, _ = await _flow(_app(engine, config, provider))
    assert again.status_code == 200 and len(await list_accounts(engine=engine)) == 1


async def test_role_comes_from_the_claim_at_every_sign_in(engine, config, provider):
    app = _app(engine, config, provider, role_claim="groups")
    _, browser = await _flow(app)
    assert (await resolve_session(engine=engine, token=browser.cookies[SESSION_COOKIE], config=config)).role is Role.REVIEWER
    provider.user["groups"] = ["staff", "admin"]
    _, browser = await _flow(app)
    assert (await resolve_session(engine=engine, token=browser.cookies[SESSION_COOKIE], config=config)).role is Role.ADMIN


async def test_without_a_role_claim_the_admin_decides(engine, config, provider):
    app = _app(engine, config, provider)
    await _flow(app)
    sam = await find_account(engine=engine, email="sam@example.com")
    await set_role(engine=engine, account_id=sam.account_id, role=Role.REVIEWER, by=SYSTEM)
    _, browser = await _flow(app)
    assert (await resolve_session(engine=engine, token=browser.cookies[SESSION_COOKIE], config=config)).role is Role.REVIEWER


async def test_verified_email_links_an_existing_local_account_which_keeps_its_password(engine, config, provider, make_account):
    local = await make_account(email="sam@example.com", name="Sam")
    _, browser = await _flow(_app(engine, config, provider))
    who = await resolve_session(engine=engine, token=browser.cookies[SESSION_COOKIE], config=config)
    assert who.account_id == local.account_id
    assert await sign_in(engine=engine, email="sam@example.com", password=PW, client="", config=config)


async def test_unverified_email_does_not_take_over_a_local_account(engine, config, provider, make_account):
    await make_account(email="sam@example.com", name="Sam")
    provider.user["email_verified"] = False
    done, browser = await _flow(_app(engine, config, provider))
    assert done.headers["location"] == "/sign-in?error=sso" and SESSION_COOKIE not in browser.cookies


@pytest.mark.parametrize(
    "tamper",
    [{"aud": "someone-else"}, {"iss": "http://127.0.0.1:1"}, {"nonce": "replayed"}, {"exp": 1_000_000}, "other-key"],
)
async def test_an_id_token_that_does_not_verify_is_refused(engine, config, provider, tamper):
    if tamper == "other-key":
        provider.sign_with = RSAKey.generate_key(2048, parameters={"kid": "test-key"})
    else:
        provider.id_token_overrides = tamper
    done, browser = await _flow(_app(engine, config, provider))
    assert done.headers["location"] == "/sign-in?error=sso" and SESSION_COOKIE not in browser.cookies
    assert await list_accounts(engine=engine) == []


async def test_a_callback_with_a_forged_state_is_refused(engine, config, provider):
    app = _app(engine, config, provider)
    browser = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
    await browser.get("/auth/oidc/login")
    r = await browser.get("/auth/oidc/callback", params={"code": "x", "state": "forged"})
    assert r.headers["location"] == "/sign-in?error=sso" and provider.token_requests == 0


async def test_a_disabled_sso_account_cannot_sign_in(engine, config, provider):
    app = _app(engine, config, provider)
    await _flow(app)
    sam = await find_account(engine=engine, email="sam@example.com")
    await disable(engine=engine, account_id=sam.account_id, by=SYSTEM)
    done, browser = await _flow(app)
    assert done.headers["location"] == "/sign-in?error=disabled" and SESSION_COOKIE not in browser.cookies


async def test_local_password_sign_in_cannot_open_an_sso_only_account(engine, config, provider):
    await _flow(_app(engine, config, provider))
    with pytest.raises(Exception, match="Wrong email or password"):
        await sign_in(engine=engine, email="sam@example.com", password="", client="", config=config)


async def test_an_unverified_email_gets_no_account_and_so_no_rights_named_by_it(engine, config, provider):
    provider.user.update(sub="attacker-123", email="CFO@example.com", email_verified=False)
    done, browser = await _flow(_app(engine, config, provider))
    assert done.headers["location"] == "/sign-in?error=sso" and SESSION_COOKIE not in browser.cookies
    assert await find_account(engine=engine, email="cfo@example.com") is None, "the unverified email was taken"
    provider.user.update(sub="cfo-1", email_verified=True)  # the real owner of the address still can
    done, _ = await _flow(_app(engine, config, provider))
    assert done.status_code == 200 and (await find_account(engine=engine, email="cfo@example.com")) is not None


async def test_the_role_claim_never_demotes_the_last_admin(engine, config, provider):
    provider.user["groups"] = ["admin"]
    app = _app(engine, config, provider, role_claim="groups")
    await _flow(app)
    provider.user["groups"] = ["staff"]
    _, browser = await _flow(app)
    who = await resolve_session(engine=engine, token=browser.cookies[SESSION_COOKIE], config=config)
    assert who.role is Role.ADMIN, "the only admin was demoted by the provider's claim"
