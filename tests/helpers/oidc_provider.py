"""A real, minimal OpenID Connect provider for tests, served over HTTP on loopback.

It speaks the authorization code flow with PKCE (S256): discovery, JWKS, ``/authorize`` (which
approves the configured test user at once, as if they had signed in there), and ``/token`` (client
secret by HTTP Basic or form, single-use codes, redirect_uri and PKCE checks, an RS256 id_token).

    with OidcTestProvider(client_id="hitl", client_secret="s3cret", user={...}) as provider:
        provider.issuer  # "http://127.0.0.1:<port>"

``serve(app)`` runs any ASGI app on a free loopback port in a thread (used for the provider).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import uvicorn
from joserfc import jwt
from joserfc.jwk import RSAKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route


@contextlib.contextmanager
def serve(app: Any) -> Iterator[str]:
    """Serve ``app`` on ``127.0.0.1:<free port>`` in a thread; yield its base URL; stop on exit."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test OIDC provider did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


class OidcTestProvider:
    """The provider. ``user`` holds the id_token claims of the test user (``sub`` at least).

    ``token_requests`` counts token-endpoint calls; ``codes`` holds the pending codes. To test
    refusals, ``id_token_overrides`` replaces claims of issued id_tokens (e.g. ``{"aud": "other"}``)
    and ``sign_with`` signs them with another key.
    """

    def __init__(self, *, client_id: str, client_secret: str, user: dict[str, Any]) -> None:
        self.client_id, self.client_secret, self.user = client_id, client_secret, dict(user)
        self.key = RSAKey.generate_key(2048, parameters={"kid": "test-key", "use": "sig", "alg": "RS256"})
        self.codes: dict[str, dict[str, Any]] = {}
        self.token_requests = 0
        self.id_token_overrides: dict[str, Any] = {}
        self.sign_with: RSAKey | None = None
        self.issuer = ""
        self._serving: contextlib.AbstractContextManager[str] | None = None

    def __enter__(self) -> OidcTestProvider:
        self._serving = serve(self.app())
        self.issuer = self._serving.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._serving is not None
        self._serving.__exit__(*exc)

    def app(self) -> Starlette:
        """The provider's ASGI app."""
        return Starlette(routes=[
            Route("/.well-known/openid-configuration", self._discovery),
            Route("/jwks", self._jwks),
            Route("/authorize", self._authorize),
            Route("/token", self._token, methods=["POST"]),
        ])

    async def _discovery(self, request: Request) -> Response:
        return JSONResponse({
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        })

    async def _jwks(self, request: Request) -> Response:
        return JSONResponse({"keys": [self.key.as_dict(private=False)]})

    async def _authorize(self, request: Request) -> Response:
        q = request.query_params
        if q.get("client_id") != self.client_id or q.get("response_type") != "code":
            return JSONResponse({"error": "unauthorized_client"}, status_code=400)
        if q.get("code_challenge_method") != "S256" or not q.get("code_challenge") or "openid" not in q.get("scope", ""):
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        code = secrets.token_urlsafe(24)
        self.codes[code] = {
            "redirect_uri": q["redirect_uri"], "challenge": q["code_challenge"], "nonce": q.get("nonce"),
            "claims": dict(self.user),
        }
        return RedirectResponse(f"{q['redirect_uri']}?{urlencode({'code': code, 'state': q.get('state', '')})}", 302)

    def _client_ok(self, request: Request, form: Any) -> bool:
        header = request.headers.get("authorization", "")
        if header.startswith("Basic "):
            cid, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        else:
            cid, secret = form.get("client_id", ""), form.get("client_secret", "")
        return cid == self.client_id and secret == self.client_secret

    async def _token(self, request: Request) -> Response:
        self.token_requests += 1
        form = await request.form()
        if not self._client_ok(request, form):
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        grant = self.codes.pop(str(form.get("code", "")), None)
        if form.get("grant_type") != "authorization_code" or grant is None:
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        if form.get("redirect_uri") != grant["redirect_uri"]:
            return JSONResponse({"error": "invalid_grant", "error_description": "redirect_uri"}, status_code=400)
        if _s256(str(form.get("code_verifier", ""))) != grant["challenge"]:
            return JSONResponse({"error": "invalid_grant", "error_description": "PKCE"}, status_code=400)
        return JSONResponse({
            "access_token": secrets.token_urlsafe(16), "token_type": "Bearer", "expires_in": 300,
            "id_token": self.id_token(grant["claims"], nonce=grant["nonce"], key=self.sign_with, **self.id_token_overrides),
        })

    def id_token(self, claims: dict[str, Any], *, nonce: str | None, key: RSAKey | None = None, **over: Any) -> str:
        """An RS256 id_token for ``claims`` (``over`` replaces standard claims, e.g. ``aud``)."""
        now = int(time.time())
        body = {"iss": self.issuer, "aud": self.client_id, "iat": now, "exp": now + 300, **claims}
        if nonce is not None:
            body["nonce"] = nonce
        body.update(over)
        signing = key or self.key
        return jwt.encode({"alg": "RS256", "kid": signing.kid}, body, signing)
