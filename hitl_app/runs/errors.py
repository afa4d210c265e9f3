"""Turn an exception that ended a run into one plain sentence for the thread (with what to do).

Provider errors are recognised through ``langchain_core.exceptions.ModelError`` subclasses (which
``langchain-openai`` and ``langchain-anthropic`` raise: rate limit, API error, connection,
timeout, auth) and, failing that, an HTTP ``status_code`` attribute. Anything else (a database,
tool or programming error) can carry SQL text, host names or user names, so the user sees only a
generic sentence with a short log id, and the details go to the server log under that id. The text
always ends with what the user can do (``press Retry``).
"""

from __future__ import annotations

import hashlib
import logging
import re

from langchain_core import exceptions as lc

from hitl_app.errors import ThreadError
from hitl_app.logsafe import one_log_line
from hitl_app.store.sqlite import is_lock_timeout

log = logging.getLogger(__name__)

DATABASE_BUSY = (
    "The database was busy (another writer held it too long), so this step was not saved. "
    "Nothing is half-written: press Retry to run it again."
)
"""The text for a run ended by a SQLite lock wait that timed out (retryable; the checkpoint
is written in one transaction, so the thread is at its last completed step)."""

_REPR = re.compile(r"^(\w+)\((.*)\)$", re.DOTALL)
_CODE = re.compile(r"Error code: (\d{3})")


def describe_error_text(text: str) -> str:
    """Like ``describe_run_error`` for an error stored in a checkpoint as ``repr(exc)`` text,
    e.g. ``"OpenAIRateLimitError('Error code: 429 - ...')"``; other text gives the generic sentence
    with its log id (the text is logged under that id)."""
    text = (text or "").strip()
    if "database is locked" in text or "database table is locked" in text:
        return DATABASE_BUSY
    match = _REPR.match(text)
    name, detail = (match.group(1), match.group(2).strip("'\"")) if match else ("", text)
    code = _CODE.search(text)
    status = int(code.group(1)) if code else None
    if "RateLimit" in name or status == 429:
        return "The model provider is rate-limiting requests (HTTP 429). Wait a moment and press Retry."
    if "Authentication" in name or status == 401:
        return "The model provider refused the API key (HTTP 401): check the key the server was started with."
    if "Timeout" in name:
        return "The model provider did not answer in time. Press Retry."
    if "ConnectionError" in name or "RemoteProtocolError" in name:
        return "The connection to the model provider failed or dropped mid-reply. Press Retry."
    if status is not None and status >= 500:
        return f"The model provider had an internal error (HTTP {status}). Press Retry."
    return _internal_error(name or "Error", detail)


def describe_run_error(exc: BaseException) -> str:
    """One line for a failed run, e.g. ``"The model provider is rate-limiting requests (HTTP 429).
    Wait a moment and press Retry."``; never empty. An error that is not the model provider's is
    logged (with its traceback) and described as ``"The run failed because of an internal error
    (log id 1a2b3c4d). Press Retry; ..."``. A ``ThreadError`` (a deployed agent's error, already one
    plain sentence: ``runs/remote_stream.py``) is its message."""
    if isinstance(exc, ThreadError):
        return exc.message
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    detail = " ".join(str(exc).split())[:200]
    if isinstance(exc, lc.ModelRateLimitError) or status == 429:
        return "The model provider is rate-limiting requests (HTTP 429). Wait a moment and press Retry."
    if isinstance(exc, lc.ModelAuthenticationError) or status == 401:
        return "The model provider refused the API key (HTTP 401): check the key the server was started with."
    if isinstance(exc, lc.ModelTimeoutError):
        return "The model provider did not answer in time. Press Retry."
    if isinstance(exc, lc.ModelConnectionError):
        return "The connection to the model provider failed or dropped mid-reply. Press Retry."
    if isinstance(status, int) and status >= 500:
        return f"The model provider had an internal error (HTTP {status}). Press Retry."
    if isinstance(exc, lc.ModelError):
        code = f" (HTTP {status})" if isinstance(status, int) else ""
        return f"The model provider returned an error{code}: {detail}. Press Retry."
    if is_lock_timeout(exc):
        log.warning("run ended by a database lock wait that timed out: %s", type(exc).__name__)
        return DATABASE_BUSY
    name = type(exc).__name__
    if "RemoteProtocolError" in name or "incomplete chunked read" in detail:
        return "The connection to the model provider failed or dropped mid-reply. Press Retry."
    return _internal_error(name, str(exc), exc)


def log_id_for(name: str, detail: str) -> str:
    """A short id (8 hex digits) for an error, the same for the same type name and text, so the
    id a user quotes finds the error's log lines even when the thread is reloaded later."""
    return hashlib.sha256(f"{name}: {' '.join(detail.split())}".encode()).hexdigest()[:8]


def _internal_error(name: str, detail: str, exc: BaseException | None = None) -> str:
    log_id = log_id_for(name, detail)
    log.error("run error log id %s: %s: %s", log_id, name, one_log_line(detail, limit=4000), exc_info=exc)
    return (
        f"The run failed because of an internal error (log id {log_id}). Press Retry; if it fails again, "
        "give the log id to whoever runs this server."
    )
