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
``?error=<code>`` (``hitl_app.auth.form_errors`` maps codes to sentences). JSON gets ``{"ok": true}`` or
``{"error": "<sentence>"}`` with 400/401/403/413/429. Requests whose ``Origin`` is neither the
app's own origin (scheme, host and port) nor in ``HITL_ALLOWED_ORIGINS`` are refused (403): no
sign-in or sign-out from other sites. Bodies over ``MAX_AUTH_BODY`` are refused (413) unread.

The session cookie (``hitl_app.auth.cookie``) is HttpOnly, SameSite=Strict, Secure on https. The
Reflex state reads it server-side from the websocket handshake: ``self.router.headers.cookie`` (the
raw ``Cookie`` header, never sent to the browser) through ``cookie.session_key``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote, urlencode

from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from hitl_app.auth import accounts, sessions
from hitl_app.auth.cookie import SESSION_COOKIE, clear_session_cookie, is_https, set_session_cookie
from hitl_app.auth.form_errors import ERROR_MESSAGES, error_code
from hitl_app.auth.forms import BodyTooLarge, origin_key, read_fields, same_site
from hitl_app.auth.oidc import OidcClient, OidcError, OidcSettings, sign_in_oidc
from hitl_app.auth.types import AuthConfig, AuthError, TooManyAttempts, WrongCredentials
from hitl_app.logsafe import one_log_line
from hitl_app.settings import allowed_origins as settings_allowed_origins

log = logging.getLogger(__name__)

OIDC_COOKIE = "hitl_oidc"
CALLBACK_PATH = "/auth/oidc/callback"

_CONTINUE_PAGE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">'
    '<meta http-equiv="refresh" content="0;url={path}">'
    '<title>Signed in</title></head><body><p>Signed in. <a href="{path}">Continue</a></p></body></html>'
)
"""The answer of a completed single sign-on: the browser goes on to ``path`` by itself."""


def _too_large() -> Response:
    return JSONResponse({"error": "The request is too large"}, status_code=413)


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


class AuthRoutes:
    """The handlers; ``get_engine`` is called per request (the engine may open after import)."""

    def __init__(
        self, *, get_engine: Callable[[], AsyncEngine], config: AuthConfig | None, oidc: OidcClient | None,
        sign_in_page: str = "/sign-in", after_sign_in: str = "/", allowed_origins: list[str] | None = None,
        signed_out: Callable[[int], Awaitable[None]] | None = None,
    ) -> None:
        self.get_engine, self.config, self.oidc = get_engine, config, oidc
        origins = settings_allowed_origins() if allowed_origins is None else allowed_origins
        self.allowed = frozenset(k for k in map(origin_key, origins) if k is not None)
        self.sign_in_page, self.after_sign_in, self.signed_out = sign_in_page, after_sign_in, signed_out

    def _fail(self, exc: AuthError, as_json: bool, page: str | None = None, email: str = "") -> Response:
        """The refusal: JSON, or a redirect to the form with ``?error=`` (and the typed ``email``, so
        the form keeps it after a wrong password, QA M7; never the password)."""
        code, status = error_code(exc)
        if as_json:
            headers = {"Retry-After": str(exc.minutes * 60)} if isinstance(exc, TooManyAttempts) else None
            return JSONResponse({"error": str(exc)}, status_code=status, headers=headers)
        query = {"error": code, **({"minutes": str(exc.minutes)} if isinstance(exc, TooManyAttempts) else {}),
                 **({"email": email.strip()} if email.strip() and len(email) <= 254 else {})}
        return RedirectResponse(f"{page or self.sign_in_page}?{urlencode(query)}", status_code=303)

    def _ok(self, request: Request, token: str, as_json: bool, next_path: str) -> Response:
        response: Response = JSONResponse({"ok": True}) if as_json else RedirectResponse(next_path, status_code=303)
        set_session_cookie(response, request, token)
        return response

    async def _form_action(
        self, request: Request, action: Callable[[dict[str, str], str], Awaitable[str]],
        page_for: Callable[[dict[str, str]], str] | None = None,
    ) -> Response:
        if not same_site(request, self.allowed):
            return JSONResponse({"error": "Cross-site request refused"}, status_code=403)
        try:
            fields, as_json = await read_fields(request)
        except BodyTooLarge:
            return _too_large()
        client = request.client.host if request.client else ""
        try:
            token = await action(fields, client)
        except AuthError as exc:
            return self._fail(exc, as_json, page_for(fields) if page_for else None, email=fields.get("email", ""))
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
            who = await accounts.create_admin(
                engine=self.get_engine(), email=f.get("email", ""), display_name=f.get("name", ""),
                password=f.get("password", ""), client=client, config=self.config,
            )
            return await sessions.start_session(
                engine=self.get_engine(), account_id=who.account_id, client=client, config=self.config
            )

        return await self._form_action(request, act)

    async def accept_invite(self, request: Request) -> Response:
        """``POST /auth/invite`` (token, name, password): accepts an invite and signs the new account in."""
        async def act(f: dict[str, str], client: str) -> str:
            who = await accounts.accept_invite(
                engine=self.get_engine(), token=f.get("token", ""), display_name=f.get("name", ""),
                password=f.get("password", ""), client=client, config=self.config,
            )
            return await sessions.start_session(
                engine=self.get_engine(), account_id=who.account_id, client=client, config=self.config
            )

        return await self._form_action(request, act, lambda f: f"/invite/{quote(f.get('token', ''), safe='')}")

    async def sign_out(self, request: Request) -> Response:
        """``POST /auth/sign-out`` (everywhere=1 ends every session of the account): clears the cookie."""
        if not same_site(request, self.allowed):
            return JSONResponse({"error": "Cross-site request refused"}, status_code=403)
        try:
            fields, as_json = await read_fields(request)
        except BodyTooLarge:
            return _too_large()
        token, engine = request.cookies.get(SESSION_COOKIE, ""), self.get_engine()
        who = await sessions.resolve_session(engine=engine, token=token, config=self.config)
        if who is not None and fields.get("everywhere") in ("1", "true", "on"):
            await sessions.sign_out_everywhere(engine=engine, account_id=who.account_id)
        else:
            await sessions.sign_out(engine=engine, token=token)
        if who is not None and self.signed_out is not None:  # its other open tabs learn of it now
            await self.signed_out(who.account_id)
        response: Response = JSONResponse({"ok": True}) if as_json else RedirectResponse(self.sign_in_page, 303)
        clear_session_cookie(response, request)
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
                    new_password=f.get("password", ""), keep_token=token, client=client, config=self.config,
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
            log.warning("single sign-on: %s", one_log_line(str(exc.__cause__ or exc)))
            return self._fail(exc, as_json=False)
        response = RedirectResponse(login.url, status_code=302)
        response.set_cookie(
            OIDC_COOKIE, f"{login.state}.{login.nonce}.{login.code_verifier}", max_age=600,
            path="/auth/oidc", httponly=True, samesite="lax", secure=is_https(request),
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
            log.warning("single sign-on refused: %s (%s)", one_log_line(str(exc)), one_log_line(str(exc.__cause__)))
            response = self._fail(exc, as_json=False)
        else:
            # not a redirect: a navigation that started at the provider's site is cross-site, and the
            # browser would leave the SameSite=Strict cookie off the redirected request; this page's
            # own refresh is same-site, so the first page load is already signed in
            response = HTMLResponse(_CONTINUE_PAGE.format(path=self.after_sign_in))
            set_session_cookie(response, request, token)
        response.delete_cookie(OIDC_COOKIE, path="/auth/oidc", httponly=True, samesite="lax", secure=is_https(request))
        return response


def auth_routes(
    *, get_engine: Callable[[], AsyncEngine], config: AuthConfig | None = None, oidc: OidcClient | None = None, **pages: Any
) -> list[Route]:
    """The routes listed in the module docstring.

    Args:
        get_engine: returns the app database's async engine (called per request).
        config: session and rate-limit knobs (default: from the settings).
        oidc: the single sign-on client; None turns the two OIDC routes into 404s.
        **pages: ``sign_in_page`` (where form errors and sign-out redirect to, ``/sign-in``), ``after_sign_in``
            (where a form sign-in naming no ``next`` goes, ``/``), ``allowed_origins`` (other origins whose pages
            may post the forms; default ``hitl_app.settings.allowed_origins()``, as for the websocket),
            ``signed_out`` (awaited with the account id after a sign-out ended its session(s); must not raise).
    """
    h = AuthRoutes(get_engine=get_engine, config=config, oidc=oidc, **pages)
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
    *, get_engine: Callable[[], AsyncEngine], config: AuthConfig | None = None, oidc: OidcClient | None = None, **pages: Any
) -> Starlette:
    """A Starlette app with ``auth_routes`` (OIDC from ``HITL_OIDC_*`` unless ``oidc`` is given; ``pages``:
    its other arguments); pass it to ``rx.App(api_transformer=...)``, which mounts the Reflex app beneath it."""
    if oidc is None and (oidc_settings := OidcSettings.from_settings()) is not None:
        oidc = OidcClient(oidc_settings)
    return Starlette(routes=auth_routes(get_engine=get_engine, config=config, oidc=oidc, **pages))
