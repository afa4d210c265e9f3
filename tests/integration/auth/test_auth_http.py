"""The sign-in/sign-out HTTP routes: cookie attributes, form and JSON answers, cross-site refusal."""

from __future__ import annotations

import httpx
import pytest

from hitl_app.auth import first_run_needed, resolve_session
from hitl_app.auth.cookie import SESSION_COOKIE, session_token_from_cookie_header
from hitl_app.auth.form_errors import error_message
from hitl_app.auth.http import auth_app

PW = "correct horse 1"


@pytest.fixture
def client_for(engine, config):
    def make(base_url: str = "http://testserver") -> httpx.AsyncClient:
        # the dev front end (port 3000) is an allowed origin, as HITL_ALLOWED_ORIGINS's default makes it
        app = auth_app(get_engine=lambda: engine, config=config, allowed_origins=["http://testserver:3000"])
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base_url)

    return make


def _set_cookie(response: httpx.Response) -> str:
    return next(v for k, v in response.headers.multi_items() if k == "set-cookie" and v.startswith(SESSION_COOKIE))


async def test_form_sign_in_sets_an_httponly_strict_cookie_and_redirects(engine, config, make_account, client_for):
    await make_account()
    async with client_for() as c:
        r = await c.post("/auth/sign-in", data={"email": "dana@example.com", "password": PW, "next": "/thread/abc"})
    assert r.status_code == 303 and r.headers["location"] == "/thread/abc"
    cookie = _set_cookie(r)
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie and "Secure" not in cookie
    token = cookie.split(";")[0].split("=", 1)[1]
    assert (await resolve_session(engine=engine, token=token, config=config)).display_name == "Dana"


async def test_cookie_is_secure_over_https(engine, make_account, client_for):
    await make_account()
    async with client_for("https://testserver") as c:
        r = await c.post("/auth/sign-in", json={"email": "dana@example.com", "password": PW})
    assert r.status_code == 200 and r.json() == {"ok": True}
    assert "Secure" in _set_cookie(r)


async def test_json_sign_in_errors_are_plain_sentences(engine, config, make_account, client_for):
    await make_account()
    async with client_for() as c:
        wrong = await c.post("/auth/sign-in", json={"email": "dana@example.com", "password": "nope nope"})
        assert (wrong.status_code, wrong.json()) == (401, {"error": "Wrong email or password"})
        for _ in range(config.max_failures_per_account - 1):
            await c.post("/auth/sign-in", json={"email": "dana@example.com", "password": "nope nope"})
        locked = await c.post("/auth/sign-in", json={"email": "dana@example.com", "password": PW})
    assert locked.status_code == 429 and locked.json()["error"].startswith("Too many attempts; try again in")
    assert int(locked.headers["retry-after"]) > 0
    assert SESSION_COOKIE not in locked.cookies


async def test_form_errors_redirect_to_the_sign_in_page_with_a_code(engine, make_account, client_for):
    await make_account()
    async with client_for() as c:
        r = await c.post("/auth/sign-in", data={"email": "dana@example.com", "password": "nope nope"})
    # the typed email goes back to the form (QA M7: it was emptied), the password never
    assert r.status_code == 303 and r.headers["location"] == "/sign-in?error=wrong&email=dana%40example.com"
    assert error_message("wrong") == "Wrong email or password"
    assert error_message("locked", "3") == "Too many attempts; try again in 3 minutes"


async def test_next_never_leaves_the_site(engine, make_account, client_for):
    await make_account()
    async with client_for() as c:
        for bad in ("https://evil.example/", "//evil.example", "/\\evil.example"):
            r = await c.post("/auth/sign-in", data={"email": "dana@example.com", "password": PW, "next": bad})
            assert r.headers["location"] == "/"


async def test_cross_site_sign_in_and_sign_out_are_refused(engine, make_account, client_for):
    await make_account()
    async with client_for() as c:
        r = await c.post("/auth/sign-in", data={"email": "dana@example.com", "password": PW},
                         headers={"Origin": "https://evil.example"})
        assert r.status_code == 403 and SESSION_COOKIE not in r.cookies
        ok = await c.post("/auth/sign-in", data={"email": "dana@example.com", "password": PW},
                          headers={"Origin": "http://testserver:3000"})  # the dev front end's port: same site
        assert ok.status_code == 303
        assert (await c.post("/auth/sign-out", headers={"Origin": "https://evil.example"})).status_code == 403
        # under the app's Referrer-Policy: no-referrer a browser's form post says Origin: null;
        # Sec-Fetch-Site tells a same-origin post from another site's (or a sandboxed frame's)
        for site, status in (("cross-site", 403), ("same-site", 403), ("same-origin", 303)):
            r = await c.post("/auth/sign-in", data={"email": "dana@example.com", "password": PW},
                             headers={"Origin": "null", "Sec-Fetch-Site": site})
            assert r.status_code == status, site
        bare_null = await c.post("/auth/sign-in", data={"email": "dana@example.com", "password": PW}, headers={"Origin": "null"})
        assert bare_null.status_code == 403


async def test_sign_out_deletes_the_session_and_clears_the_cookie(engine, config, make_account, client_for):
    await make_account()
    async with client_for() as c:
        await c.post("/auth/sign-in", data={"email": "dana@example.com", "password": PW})
        token = c.cookies[SESSION_COOKIE]
        r = await c.post("/auth/sign-out")
    assert r.status_code == 303 and r.headers["location"] == "/sign-in"
    assert f'{SESSION_COOKIE}=""' in _set_cookie(r) and "Max-Age=0" in _set_cookie(r)
    assert await resolve_session(engine=engine, token=token, config=config) is None


async def test_sign_out_everywhere_ends_other_browsers_too(engine, config, make_account, client_for):
    await make_account()
    async with client_for() as laptop, client_for() as phone:
        for c in (laptop, phone):
            await c.post("/auth/sign-in", data={"email": "dana@example.com", "password": PW})
        phone_token = phone.cookies[SESSION_COOKIE]
        await laptop.post("/auth/sign-out", data={"everywhere": "1"})
    assert await resolve_session(engine=engine, token=phone_token, config=config) is None


async def test_first_run_form_creates_the_admin_and_signs_in_once(engine, config, client_for):
    async with client_for() as c:
        r = await c.post("/auth/first-run", data={"email": "ada@example.com", "name": "Ada", "password": PW})
        assert r.status_code == 303
        who = await resolve_session(engine=engine, token=c.cookies[SESSION_COOKIE], config=config)
        assert who.is_admin and await first_run_needed(engine=engine) is False
        again = await c.post("/auth/first-run", json={"email": "m@example.com", "name": "M", "password": PW})
    assert again.status_code == 400 and "already exists" in again.json()["error"]


def test_the_token_is_read_from_a_raw_cookie_header():
    assert session_token_from_cookie_header(f"a=1; {SESSION_COOKIE}=tok-123; b=2") == "tok-123"
    assert session_token_from_cookie_header("") == ""
    assert session_token_from_cookie_header('bad"cookie') == ""


async def test_invite_form_errors_return_to_the_invite_page_and_success_signs_in(engine, config, client_for):
    from hitl_app.auth import SYSTEM, Role, create_invite

    token = await create_invite(engine=engine, email="rex@example.com", role=Role.REVIEWER, by=SYSTEM, config=config)
    async with client_for() as c:
        short = await c.post("/auth/invite", data={"token": token, "name": "Rex", "password": "short"})
        assert short.headers["location"] == f"/invite/{token}?error=password"
        assert error_message("password") == "Use at least 8 characters for the password"
        long = await c.post("/auth/invite", data={"token": token, "name": "R" * 3000, "password": PW})
        assert long.headers["location"] == f"/invite/{token}?error=long_name"  # refused, not cut to 100 characters
        assert error_message("long_name") == "Use at most 100 characters for the name"
        ok = await c.post("/auth/invite", data={"token": token, "name": "Rex", "password": PW})
        assert ok.status_code == 303
        who = await resolve_session(engine=engine, token=c.cookies[SESSION_COOKIE], config=config)
        assert (who.email, who.role) == ("rex@example.com", Role.REVIEWER)
        used = await c.post("/auth/invite", data={"token": token, "name": "Rex", "password": PW})
    assert used.headers["location"] == f"/invite/{token}?error=invite"


async def test_same_site_means_the_same_scheme_host_and_port(engine, make_account, client_for):
    await make_account()
    async with client_for() as c:
        answers = {}
        for origin in ("http://testserver", "http://testserver:80", "http://testserver:9999", "https://testserver"):
            r = await c.post("/auth/sign-in", data={"email": "dana@example.com", "password": PW}, headers={"Origin": origin})
            answers[origin] = r.status_code
    assert answers == {"http://testserver": 303, "http://testserver:80": 303, "http://testserver:9999": 403,
                       "https://testserver": 403}
