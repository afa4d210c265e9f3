"""Random bearer tokens (sessions, invites) and the SHA-256 the database keeps instead of them."""

from __future__ import annotations

import hashlib
import secrets

TOKEN_BYTES = 32


def new_token() -> str:
    """A fresh URL-safe token with 256 bits of randomness (43 characters)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(token: str) -> str:
    """The SHA-256 of ``token`` as 64 hex characters (what the database stores and looks up)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
