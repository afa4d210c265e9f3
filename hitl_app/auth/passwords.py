"""Password hashing with argon2id through ``pwdlib``; hashing runs off the event loop.

Every hash and verification of the process runs on one small dedicated thread pool of
``ARGON2_CONCURRENCY`` threads (argon2id here costs 64 MiB and about 0.17 s of CPU each), so however
many requests arrive at once, at most that many run at a time and the rest wait their turn; the
default executor stays free for the app's other work. ``argon2_stats`` reports how many ran and the
most that ran at once (for tests and diagnosis).
"""

from __future__ import annotations

import asyncio
import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pwdlib import PasswordHash
from pwdlib.exceptions import PwdlibError
from pwdlib.hashers.argon2 import Argon2Hasher

ARGON2_CONCURRENCY = 2
"""The most argon2 hashes or verifications that run at once in one app process."""

_pool = ThreadPoolExecutor(max_workers=ARGON2_CONCURRENCY, thread_name_prefix="argon2")


@dataclass
class Argon2Stats:
    """``runs``: hashes and verifications started since the process began; ``peak``: the most at once."""

    runs: int = 0
    peak: int = 0
    running: int = 0


_stats = Argon2Stats()
_stats_lock = threading.Lock()


def argon2_stats() -> Argon2Stats:
    """A copy of the process's argon2 counters (``runs``, ``peak``, ``running``)."""
    with _stats_lock:
        return Argon2Stats(_stats.runs, _stats.peak, _stats.running)


def reset_argon2_peak() -> None:
    """Start measuring ``peak`` afresh (from what runs now)."""
    with _stats_lock:
        _stats.peak = _stats.running


def _counted(work):
    @functools.wraps(work)
    def run(*args):
        with _stats_lock:
            _stats.runs += 1
            _stats.running += 1
            _stats.peak = max(_stats.peak, _stats.running)
        try:
            return work(*args)
        finally:
            with _stats_lock:
                _stats.running -= 1

    return run


@functools.cache
def _hasher() -> PasswordHash:
    return PasswordHash((Argon2Hasher(),))


@_counted
def hash_password_sync(password: str) -> str:
    """The argon2id hash of ``password`` (a ``$argon2id$...`` string, salted)."""
    return _hasher().hash(password)


@_counted
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
    """``hash_password_sync`` on the argon2 pool (at most ``ARGON2_CONCURRENCY`` at once)."""
    return await asyncio.get_running_loop().run_in_executor(_pool, hash_password_sync, password)


async def verify_password(password: str, password_hash: str | None) -> bool:
    """``verify_password_sync`` on the argon2 pool (at most ``ARGON2_CONCURRENCY`` at once)."""
    return await asyncio.get_running_loop().run_in_executor(_pool, verify_password_sync, password, password_hash)
