"""Password hashing with argon2id through ``pwdlib``; hashing runs off the event loop."""

from __future__ import annotations

import asyncio
import functools

from pwdlib import PasswordHash
from pwdlib.exceptions import PwdlibError
from pwdlib.hashers.argon2 import Argon2Hasher


@functools.cache
def _hasher() -> PasswordHash:
    return PasswordHash((Argon2Hasher(),))


def hash_password_sync(password: str) -> str:
    """The argon2id hash of ``password`` (a ``$argon2id$...`` string, salted)."""
    return _hasher().hash(password)


def verify_password_sync(password: str, password_hash: str | None) -> bool:
    """True when ``password`` matches ``password_hash``. With no hash (an OIDC-only account) it
    still spends the time of one verification and returns False, so timing does not tell which."""
    if not password_hash:
        _hasher().verify(password, _dummy_hash())
        return False
    try:
        return _hasher().verify(password, password_hash)
    except PwdlibError:  # a hash no hasher recognises is a failed check, not a crash
        return False


@functools.cache
def _dummy_hash() -> str:
    return _hasher().hash("not a password of anyone")


async def hash_password(password: str) -> str:
    """``hash_password_sync`` in a worker thread (argon2 takes tens of milliseconds of CPU)."""
    return await asyncio.to_thread(hash_password_sync, password)


async def verify_password(password: str, password_hash: str | None) -> bool:
    """``verify_password_sync`` in a worker thread."""
    return await asyncio.to_thread(verify_password_sync, password, password_hash)
