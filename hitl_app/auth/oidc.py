"""Single sign-on through OpenID Connect (authorization code flow with PKCE), via ``authlib``.

Flow: ``OidcClient.begin`` builds the provider's authorization URL with a fresh ``state``, ``nonce``
and PKCE ``code_verifier`` (the caller keeps those three in a short-lived HttpOnly cookie);
the provider redirects back with ``code`` and ``state``; ``OidcClient.finish`` checks the state,
exchanges the code at the token endpoint and verifies the ``id_token`` (signature against the
provider's JWKS, ``iss``, ``aud``, ``exp``, ``nonce``); ``sign_in_oidc`` links or creates the
account by ``(issuer, subject)`` and opens a session.

Roles: with ``HITL_OIDC_ROLE_CLAIM`` set, the claim (a string or a list) sets the role at every
sign-in (the highest of ``admin``/``reviewer``/``member`` found; none found = member), but never
demotes the last active admin. Without it, new accounts start as member and the admin sets roles.
Only identities whose email the provider marks verified sign in at all.
"""

from __future__ import annotations

import hmac
import logging
import time
from dataclasses import dataclass
from typing import Any, cast

import httpx
from authlib.integrations.httpx_client import AsyncOAuth2Client
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, KeySetSerialization
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.auth.accounts import change_role_in
from hitl_app.auth.sessions import open_session
from hitl_app.auth.text import clean_display_name, normalize_email
from hitl_app.auth.tokens import new_token
from hitl_app.auth.types import AccountDisabled, AuthConfig, AuthError, Role
from hitl_app.logsafe import one_log_line
from hitl_app.settings import Settings, get_settings
from hitl_app.store import accounts as db
from hitl_app.tls import client_ssl_context

log = logging.getLogger(__name__)

ID_TOKEN_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384"]
DISCOVERY_TTL_SECONDS = 3600
CLOCK_LEEWAY_SECONDS = 60


class OidcError(AuthError):
    """Single sign-on failed; ``str()`` is a plain sentence (details go to the log, not the user)."""


@dataclass(frozen=True)
class OidcSettings:
    """The app's client at one OpenID Connect issuer."""

    issuer: str
    client_id: str
    client_secret: str
    role_claim: str | None = None

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> OidcSettings | None:
        """From ``HITL_OIDC_*``; None when single sign-on is not configured (no issuer or client id)."""
        s = settings or get_settings()
        if not s.oidc_issuer or not s.oidc_client_id:
            return None
        return cls(s.oidc_issuer.rstrip("/"), s.oidc_client_id, s.oidc_client_secret or "", s.oidc_role_claim or None)


@dataclass(frozen=True)
class LoginRequest:
    """Where to send the browser, and the three secrets to keep until the callback."""

    url: str
    state: str
    nonce: str
    code_verifier: str


@dataclass(frozen=True)
class Identity:
    """Who the provider says signed in (from a verified id_token)."""

    issuer: str
    subject: str
    email: str | None
    email_verified: bool
    name: str | None
    role: Role | None


def role_from_claim(value: Any) -> Role:
    """The highest role named in a claim value (a string or a list of strings); member if none."""
    names = [value] if isinstance(value, str) else list(value) if isinstance(value, list) else []
    found = {str(n).strip().lower() for n in names}
    for role in (Role.ADMIN, Role.REVIEWER):
        if role.value in found:
            return role
    return Role.MEMBER


class OidcClient:
    """One configured OpenID Connect provider: discovery (cached), login URL, code exchange.

    Raises OidcError from its methods; network errors surface as OidcError too.
    """

    def __init__(self, settings: OidcSettings) -> None:
        self.settings = settings
        self._metadata: dict[str, Any] | None = None
        self._metadata_at = 0.0
        self._keys: KeySet | None = None

    def _client(self, redirect_uri: str) -> AsyncOAuth2Client:
        return AsyncOAuth2Client(
            client_id=self.settings.client_id, client_secret=self.settings.client_secret,
            scope="openid email profile", redirect_uri=redirect_uri, code_challenge_method="S256", timeout=10,
            verify=client_ssl_context(),
        )

    async def metadata(self) -> dict[str, Any]:
        """The provider's discovery document (``/.well-known/openid-configuration``), cached an hour.

        Raises:
            OidcError: unreachable, not JSON, or its ``issuer`` differs from the configured one.
        """
        if self._metadata is not None and time.monotonic() - self._metadata_at < DISCOVERY_TTL_SECONDS:
            return self._metadata
        doc = await self._get_json(f"{self.settings.issuer}/.well-known/openid-configuration")
        if str(doc.get("issuer", "")).rstrip("/") != self.settings.issuer:
            raise OidcError("Single sign-on is misconfigured: the provider reports another issuer")
        self._metadata, self._metadata_at, self._keys = doc, time.monotonic(), None
        return doc

    async def _get_json(self, url: str) -> dict[str, Any]:
        try:
            async with httpx.AsyncClient(timeout=10, verify=client_ssl_context()) as http:
                response = await http.get(url)
                response.raise_for_status()
                return response.json()
        except Exception as exc:
            raise OidcError("The single sign-on provider could not be reached; try again later") from exc

    async def begin(self, *, redirect_uri: str) -> LoginRequest:
        """A login request: the authorization URL (with state, nonce and an S256 PKCE challenge)."""
        meta = await self.metadata()
        state, nonce, verifier = new_token(), new_token(), new_token() + new_token()
        async with self._client(redirect_uri) as http:
            url, _ = http.create_authorization_url(
                meta["authorization_endpoint"], state=state, nonce=nonce, code_verifier=verifier
            )
        return LoginRequest(url=url, state=state, nonce=nonce, code_verifier=verifier)

    async def finish(
        self, *, code: str, state: str, expected_state: str, nonce: str, code_verifier: str, redirect_uri: str
    ) -> Identity:
        """Check ``state``, exchange ``code`` and verify the id_token; return the ``Identity``.

        Raises:
            OidcError: state mismatch (a stale or forged callback), a failed exchange, or an
                id_token that does not verify.
        """
        if not state or not expected_state or not hmac.compare_digest(state, expected_state):
            raise OidcError("The sign-in took too long or was started elsewhere; start it again")
        meta = await self.metadata()
        try:
            async with self._client(redirect_uri) as http:
                token = await http.fetch_token(meta["token_endpoint"], code=code, code_verifier=code_verifier)
        except Exception as exc:
            raise OidcError("The single sign-on provider refused the sign-in; start it again") from exc
        claims = await self._verify_id_token(str(token.get("id_token", "")), nonce=nonce)
        return self._identity(claims)

    async def _key_set(self, *, refresh: bool = False) -> KeySet:
        if self._keys is None or refresh:
            meta = await self.metadata()
            # the provider's JSON, checked by import_key_set itself (a bad set raises JoseError)
            self._keys = KeySet.import_key_set(cast(KeySetSerialization, await self._get_json(meta["jwks_uri"])))
        return self._keys

    async def _verify_id_token(self, id_token: str, *, nonce: str) -> dict[str, Any]:
        try:
            try:
                decoded = jwt.decode(id_token, await self._key_set(), algorithms=ID_TOKEN_ALGORITHMS)
            except JoseError:  # the provider may have rotated its keys: fetch them once more
                decoded = jwt.decode(id_token, await self._key_set(refresh=True), algorithms=ID_TOKEN_ALGORITHMS)
            jwt.JWTClaimsRegistry(
                leeway=CLOCK_LEEWAY_SECONDS,
                iss={"essential": True, "value": self.settings.issuer},
                aud={"essential": True, "value": self.settings.client_id},
                sub={"essential": True},
                exp={"essential": True},
                nonce={"essential": True, "value": nonce},
            ).validate(decoded.claims)
        except (JoseError, ValueError) as exc:
            raise OidcError("The single sign-on answer did not verify; start it again") from exc
        return decoded.claims

    def _identity(self, claims: dict[str, Any]) -> Identity:
        role = None
        if self.settings.role_claim:
            role = role_from_claim(claims.get(self.settings.role_claim))
        email = claims.get("email")
        return Identity(
            issuer=self.settings.issuer, subject=str(claims["sub"]),
            email=email if isinstance(email, str) else None,
            email_verified=claims.get("email_verified") is True,
            name=next((claims[k] for k in ("name", "preferred_username") if isinstance(claims.get(k), str)), None),
            role=role,
        )


async def _link_or_create(s: AsyncSession, who: Identity) -> db.Account:
    account = await db.find_account_by_oidc(session=s, issuer=who.issuer, subject=who.subject)
    if account is not None:
        return account
    if not who.email:
        raise OidcError("The single sign-on provider did not share an email address")
    shown, key = normalize_email(who.email)
    existing = await db.find_account_by_email(session=s, email_key=key)
    if existing is not None:
        if existing.oidc_subject is not None:
            raise OidcError("An account with this email already exists; sign in with its password")
        existing.oidc_issuer, existing.oidc_subject = who.issuer, who.subject
        return existing
    name = clean_display_name(who.name or shown.split("@", 1)[0], cut=True)  # the provider's name: cut, not refused
    account = db.Account(
        email=shown, email_key=key, display_name=name, role=(who.role or Role.MEMBER).value,
        oidc_issuer=who.issuer, oidc_subject=who.subject,
    )
    return await db.add_account(session=s, account=account)


async def sign_in_oidc(*, engine: AsyncEngine, identity: Identity, client: str, config: AuthConfig | None = None) -> str:
    """Open a session for a verified ``identity``; return the session token.

    Only an identity whose email the provider says is verified (``email_verified: true``) signs in:
    review rights, reminders and invites are named by email. Links by ``(issuer, subject)``; a
    first sign-in links to a local account with the same email, or creates a member account (or
    the claim's role). With a role claim configured, the role is updated at every sign-in, except
    that the last active admin is never demoted that way.

    Raises:
        AccountDisabled: the linked account is disabled.
        OidcError: no email, or an unverified one, from the provider; or the email belongs to
            another single sign-on account.
    """
    cfg = config or AuthConfig.from_settings()
    if not identity.email_verified:
        # rights, reminders and invites go by email: an address the provider has not verified
        # must not become (or stay) anyone's account here
        log.warning("single sign-on refused: the provider has not verified the email of subject %s",
                    one_log_line(identity.subject, limit=200))
        raise OidcError("The single sign-on provider has not verified your email address")
    async with AsyncSession(engine, expire_on_commit=False) as s:
        account = await _link_or_create(s, identity)
        if account.disabled:
            raise AccountDisabled()
        if identity.role is not None and account.role != identity.role.value:
            try:
                await change_role_in(s, account, identity.role)
            except AuthError:  # the last active admin keeps the role; an admin must hand it on first
                log.warning("single sign-on: the role claim would demote the last active admin (account %s); kept",
                            account.id)
        s.add(account)
        await s.flush()
        token = await open_session(session=s, account_id=int(account.id or 0), client=client, config=cfg)
        await s.commit()
    return token
