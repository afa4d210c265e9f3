"""Turn an exception that ended a run into one plain sentence for the thread (with what to do).

Provider errors are recognised through ``langchain_core.exceptions.ModelError`` subclasses (which
``langchain-openai`` and ``langchain-anthropic`` raise: rate limit, API error, connection,
timeout, auth) and, failing that, an HTTP ``status_code`` attribute; anything else keeps its type
and first line. The text always ends with what the user can do (``press Retry``).
"""

from __future__ import annotations

import re

from langchain_core import exceptions as lc

_REPR = re.compile(r"^(\w+)\((.*)\)$", re.DOTALL)
_CODE = re.compile(r"Error code: (\d{3})")


def describe_error_text(text: str) -> str:
    """Like ``describe_run_error`` for an error stored in a checkpoint as ``repr(exc)`` text,
    e.g. ``"OpenAIRateLimitError('Error code: 429 - ...')"``; other text keeps its first line."""
    text = (text or "").strip()
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
    line = " ".join(detail.split())[:300]
    return f"{name}: {line}" if name else (line or "The run failed.")


def describe_run_error(exc: BaseException) -> str:
    """One line for a failed run, e.g. ``"The model provider is rate-limiting requests (HTTP 429).
    Wait a moment and press Retry."``; never empty."""
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
    name = type(exc).__name__
    if "RemoteProtocolError" in name or "incomplete chunked read" in detail:
        return "The connection to the model provider failed or dropped mid-reply. Press Retry."
    return f"{name}: {detail}" if detail else name
