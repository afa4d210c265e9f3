"""HTTP routes for signing in and out; the session token travels only in an HttpOnly cookie.

``auth_app(get_engine=...)`` returns a Starlette app to give Reflex as ``api_transformer`` (Reflex
mounts its own app beneath it). Routes (each takes an HTML form or JSON):

- ``POST /auth/sign-in`` (email, password, next): sets the session cookie.
- ``POST /auth/first-run`` (email, name, password): creates the admin account while none exists.
- ``POST /auth/invite`` (token, name, password): accepts an invite.
- ``POST /auth/sign-out`` (everywhere=1 to end every session of the account): clears the cookie.
- ``POST /auth/change-password`` (current, password): the signed-in account's own password (also a
  temporary one, which must be changed before anything else); its other sessions end.
- ``GET /auth/oidc/login`` and ``GET /auth/oidc/callback``: single sign-on (404 when not configured).

Forms get a 303 redirect: to ``next`` (a same-site path) on success, or to the sign-in page with
``?error=<code>`` (``ERROR_MESSAGES`` maps codes to sentences). JSON gets ``{"ok": true}`` or
``{"error": "<sentence>"}`` with 400/401/403/429. Requests whose ``Origin`` names another host are
refused (403): no sign-in or sign-out from other sites.

The session cookie (``SESSION_COOKIE``) is HttpOnly, SameSite=Strict, Secure on https. The
Reflex state reads it server-side from the websocket handshake: ``self.router.headers.cookie`` (the
raw ``Cookie`` header, never sent to the browser) through ``session_token_from_cookie_header``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from hitl_app.auth import accounts, sessions
from hitl_app.auth.oidc import OidcClient, OidcError, OidcSettings, sign_in_oidc
from hitl_app.auth.text import NAME_TOO_LONG
from hitl_app.auth.types import AccountDisabled, AuthConfig, AuthError, TooManyAttempts, WrongCredentials

log = logging.getLogger(__name__)

SESSION_COOKIE = "hitl_session"
OIDC_COOKIE = "hitl_oidc"
CALLBACK_PATH = "/auth/oidc/callback"
COOKIE_MAX_AGE = int(timedelta(days=400).total_seconds())
"""The browser may keep the cookie long; the server decides (sliding expiry of the session row)."""

ERROR_MESSAGES = {
    "wrong": "Wrong email or password",
    "locked": "Too many attempts; try again in {minutes} minutes",
    "disabled": "This account is disabled",
    "sso": "Single sign-on did not complete; try again",
    "password": "Use at least 8 characters for the password",
    "email": "Enter an email address like name@example.com",
    "name": "Enter a name",
    "long_name": NAME_TOO_LONG,
    "taken": accounts.EMAIL_TAKEN,
    "invite": accounts.INVITE_INVALID,
    "setup": accounts.SETUP_DONE,
    "current": "The current password is wrong",
    "same": "Choose a new password that differs from the current one",
    "invalid": "That did not work; check the form and try again",
}
"""``?error=`` codes of the form redirects and the sentence to show (``locked`` takes ``minutes``)."""


_CONTINUE_PAGE = (
    '<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={path}">'
    '<title>Signed in</title></head><body><p>Signed in. <a href="{path}">Continue</a></p></body></html>'
)
"""The answer of a completed single sign-on: the browser goes on to ``path`` by itself."""


def session_token_from_cookie_header(header: str | None) -> str:
    """The session token in a raw ``Cookie`` header, or "" (also for a malformed header)."""
    if not header:
        return ""
    jar = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:
        return ""
    morsel = jar.get(SESSION_COOKIE)
    return morsel.value if morsel else ""


def error_message(code: str, minutes: str = "") -> str:
    """The sentence for an ``?error=`` code ("" for an unknown code)."""
    text = ERROR_MESSAGES.get(code, "")
    return text.format(minutes=minutes if minutes.isdigit() else "a few") if text else ""


def _error_code(exc: AuthError) -> tuple[str, int]:
    if isinstance(exc, TooManyAttempts):
        return "locked", 429
    if isinstance(exc, WrongCredentials):
        return "wrong", 401
    if isinstance(exc, AccountDisabled):
        return "disabled", 403
    if isinstance(exc, OidcError):
        return "sso", 400
    known = {text: code for code, text in ERROR_MESSAGES.items()}
    if str(exc).startswith("Choose a new password"):
        return "same", 400
    if str(exc).startswith(NAME_TOO_LONG):
        return "long_name", 400
    return known.get(str(exc), "invalid"), 400


def _safe_next(value: Any) -> str:
    text = str(value or "/")
    if not text.startswith("/") or text.startswith("//") or "\\" in text or any(ord(c) < 32 for c in text):
        return "/"
    return text


def _callback_url(request: Request) -> str:
    """This app's single sign-on callback URL, from the request's own scheme and host.

    Not ``url_for``: mounted under Reflex's top app, the router in the request scope is Reflex's.
    """
    return str(request.url.replace(path=CALLBACK_PATH, query="", fragment=""))


def _is_https(request: Request) -> bool:
    return request.url.scheme == "https"


def _same_site(request: Request) -> bool:
    """False for a request another site made the browser send (no sign-in or sign-out from there).

    Browsers send ``Origin`` on every POST; it is ``null`` for a form post under the app's
    ``Referrer-Policy: no-referrer``, and then ``Sec-Fetch-Site`` (sent by current browsers) decides.
    A request with neither header is a non-browser client and is let through.
    """
    origin = request.headers.get("origin")
    if origin and origin != "null":
        return urlsplit(origin).hostname == request.url.hostname
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site in ("same-origin", "none")
    return origin is None


async def _fields(request: Request) -> tuple[dict[str, str], bool]:
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            body = await request.json()
        except ValueError:
            body = {}
        return ({k: str(v) for k, v in body.items()} if isinstance(body, dict) else {}), True
    form = await request.form()
    return {k: str(v) for k, v in form.items() if isinstance(v, str)}, False


def _set_session_cookie(response: Response, request: Request, token: str) -> None:
    response.set_cookie(
        SESSION_COOKIE, token, max_age=COOKIE_MAX_AGE, path="/", httponly=True, samesite="strict",
        secure=_is_https(request),
    )


class AuthRoutes:
    """The handlers; ``get_engine`` is called per request (the engine may open after import)."""

    def __init__(
        self, *, get_engine: Callable[[], AsyncEngine], config: AuthConfig | None, oidc: OidcClient | None,
        sign_in_page: str, after_sign_in: str,
    ) -> None:
        self.get_engine, self.config, self.oidc = get_engine, config, oidc
        self.sign_in_page, self.after_sign_in = sign_in_page, after_sign_in

    def _fail(self, exc: AuthError, as_json: bool, page: str | None = None) -> Response:
        code, status = _error_code(exc)
        if as_json:
            headers = {"Retry-After": str(exc.minutes * 60)} if isinstance(exc, TooManyAttempts) else None
            return JSONResponse({"error": str(exc)}, status_code=status, headers=headers)
        query = {"error": code, **({"minutes": str(exc.minutes)} if isinstance(exc, TooManyAttempts) else {})}
        return RedirectResponse(f"{page or self.sign_in_page}?{urlencode(query)}", status_code=303)

    def _ok(self, request: Request, token: str, as_json: bool, next_path: str) -> Response:
        response: Response = JSONResponse({"ok": True}) if as_json else RedirectResponse(next_path, status_code=303)
        _set_session_cookie(response, request, token)
        return response

    async def _form_action(
        self, request: Request, action: Callable[[dict[str, str], str], Awaitable[str]],
        page_for: Callable[[dict[str, str]], str] | None = None,
    ) -> Response:
        if not _same_site(request):
            return JSONResponse({"error": "Cross-site request refused"}, status_code=403)
        fields, as_json = await _fields(request)
        client = request.client.host if request.client else ""
        try:
            token = await action(fields, client)
        except AuthError as exc:
            return self._fail(exc, as_json, page_for(fields) if page_for else None)
        return self._ok(request, token, as_json, _safe_next(fields.get("next") or self.after_sign_in))

    async def sign_in(self, request: Request) -> Response:
        """``POST /auth/sign-in`` (email, password, next): sets the session cookie."""
        async def act(f: dict[str, str], client: str) -> str:
            return await sessions.sign_in(
                engine=self.get_engine(), email=f.get("email", ""), password=f.get("password", ""),
                client=client, config=self.config,
            )

        return await self._form_action(request, act)

    async def first_run(self, request: Request) -> Response:
        """``POST /auth/first-run`` (email, name, password): creates the admin while none exists, signs in."""
        async def act(f: dict[str, str], client: str) -> str:
            await accounts.create_admin(
                engine=self.get_engine(), email=f.get("email", ""), display_name=f.get("name", ""),
                password=f.get("password", ""),
            )
            return await sessions.sign_in(
                engine=self.get_engine(), email=f.get("email", ""), password=f.get("password", ""),
                client=client, config=self.config,
            )

        return await self._form_action(request, act)

    async def accept_invite(self, request: Request) -> Response:
        """``POST /auth/invite`` (token, name, password): accepts an invite and signs the new account in."""
        async def act(f: dict[str, str], client: str) -> str:
            who = await accounts.accept_invite(
                engine=self.get_engine(), token=f.get("token", ""), display_name=f.get("name", ""),
                password=f.get("password", ""),
            )
            return await sessions.sign_in(
                engine=self.get_engine(), email=who.email, password=f.get("password", ""), client=client,
                config=self.config,
            )

        return await self._form_action(request, act, lambda f: f"/invite/{quote(f.get('token', ''), safe='')}")

    async def sign_out(self, request: Request) -> Response:
        """``POST /auth/sign-out`` (everywhere=1 ends every session of the account): clears the cookie."""
        if not _same_site(request):
            return JSONResponse({"error": "Cross-site request refused"}, status_code=403)
        fields, as_json = await _fields(request)
        token, engine = request.cookies.get(SESSION_COOKIE, ""), self.get_engine()
        who = await sessions.resolve_session(engine=engine, token=token, config=self.config)
        if who is not None and fields.get("everywhere") in ("1", "true", "on"):
            await sessions.sign_out_everywhere(engine=engine, account_id=who.account_id)
        else:
            await sessions.sign_out(engine=engine, token=token)
        response: Response = JSONResponse({"ok": True}) if as_json else RedirectResponse(self.sign_in_page, 303)
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict", secure=_is_https(request))
        return response

    async def change_password(self, request: Request) -> Response:
        """POST /auth/change-password: the signed-in account's own password (``current``, ``password``)."""
        async def act(f: dict[str, str], client: str) -> str:
            token = request.cookies.get(SESSION_COOKIE, "")
            who = await sessions.resolve_session(engine=self.get_engine(), token=token, config=self.config)
            if who is None:
                raise WrongCredentials()
            try:
                await accounts.change_password(
                    engine=self.get_engine(), account_id=who.account_id, current_password=f.get("current", ""),
                    new_password=f.get("password", ""), keep_token=token,
                )
            except WrongCredentials:
                raise AuthError(ERROR_MESSAGES["current"]) from None
            return token

        return await self._form_action(request, act)

    async def oidc_login(self, request: Request) -> Response:
        """``GET /auth/oidc/login``: redirects to the provider (404 when single sign-on is not configured)."""
        if self.oidc is None:
            return JSONResponse({"error": "Single sign-on is not configured"}, status_code=404)
        try:
            login = await self.oidc.begin(redirect_uri=_callback_url(request))
        except AuthError as exc:
            log.warning("single sign-on: %s", exc.__cause__ or exc)
            return self._fail(exc, as_json=False)
        response = RedirectResponse(login.url, status_code=302)
        response.set_cookie(
            OIDC_COOKIE, f"{login.state}.{login.nonce}.{login.code_verifier}", max_age=600,
            path="/auth/oidc", httponly=True, samesite="lax", secure=_is_https(request),
        )
        return response

    async def oidc_callback(self, request: Request) -> Response:
        """``GET /auth/oidc/callback``: checks the provider's answer and signs the account in."""
        if self.oidc is None:
            return JSONResponse({"error": "Single sign-on is not configured"}, status_code=404)
        state, nonce, verifier = (request.cookies.get(OIDC_COOKIE, "").split(".") + ["", "", ""])[:3]
        q = request.query_params
        try:
            if q.get("error") or not q.get("code"):
                raise OidcError(f"the provider answered {q.get('error', 'without a code')}")
            identity = await self.oidc.finish(
                code=q["code"], state=q.get("state", ""), expected_state=state, nonce=nonce,
                code_verifier=verifier, redirect_uri=_callback_url(request),
            )
            client = request.client.host if request.client else ""
            token = await sign_in_oidc(engine=self.get_engine(), identity=identity, client=client, config=self.config)
        except AuthError as exc:
            log.warning("single sign-on refused: %s (%s)", exc, exc.__cause__)
            response = self._fail(exc, as_json=False)
        else:
            # not a redirect: a navigation that started at the provider's site is cross-site, and the
            # browser would leave the SameSite=Strict cookie off the redirected request; this page's
            # own refresh is same-site, so the first page load is already signed in
            response = HTMLResponse(_CONTINUE_PAGE.format(path=self.after_sign_in))
            _set_session_cookie(response, request, token)
        response.delete_cookie(OIDC_COOKIE, path="/auth/oidc", httponly=True, samesite="lax", secure=_is_https(request))
        return response


def auth_routes(
    *, get_engine: Callable[[], AsyncEngine], config: AuthConfig | None = None, oidc: OidcClient | None = None,
    sign_in_page: str = "/sign-in", after_sign_in: str = "/",
) -> list[Route]:
    """The routes listed in the module docstring.

    Args:
        get_engine: returns the app database's async engine (called per request).
        config: session and rate-limit knobs (default: from the settings).
        oidc: the single sign-on client; None turns the two OIDC routes into 404s.
        sign_in_page: where form errors and sign-out redirect to.
        after_sign_in: where a successful form sign-in goes when it names no ``next``.
    """
    h = AuthRoutes(get_engine=get_engine, config=config, oidc=oidc, sign_in_page=sign_in_page, after_sign_in=after_sign_in)
    return [
        Route("/auth/sign-in", h.sign_in, methods=["POST"]),
        Route("/auth/first-run", h.first_run, methods=["POST"]),
        Route("/auth/invite", h.accept_invite, methods=["POST"]),
        Route("/auth/sign-out", h.sign_out, methods=["POST"]),
        Route("/auth/change-password", h.change_password, methods=["POST"]),
        Route("/auth/oidc/login", h.oidc_login, methods=["GET"]),
        Route(CALLBACK_PATH, h.oidc_callback, methods=["GET"], name="oidc_callback"),
    ]


def auth_app(
    *, get_engine: Callable[[], AsyncEngine], config: AuthConfig | None = None, oidc: OidcClient | None = None, **pages: str
) -> Starlette:
    """A Starlette app with ``auth_routes`` (OIDC from ``HITL_OIDC_*`` unless ``oidc`` is given);
    pass it to ``rx.App(api_transformer=...)``, which mounts the Reflex app beneath it."""
    if oidc is None and (oidc_settings := OidcSettings.from_settings()) is not None:
        oidc = OidcClient(oidc_settings)
    return Starlette(routes=auth_routes(get_engine=get_engine, config=config, oidc=oidc, **pages))
