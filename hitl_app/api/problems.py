"""Refusals of the decision API as problem documents (RFC 9457, ``application/problem+json``), and
the body cap every API request passes before anything reads it.

A problem document carries ``type``, ``title`` (the status in words), ``status``, ``detail`` (the same
plain sentence the page shows for that refusal: ``ReviewError.message``, ``ThreadError.message``)
and ``code`` (a stable machine word, e.g. ``stale_args``, ``forbidden``, ``rate_limited``).
"""

from __future__ import annotations

import json
from http import HTTPStatus

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hitl_app.errors import ThreadError
from hitl_app.review.validate import ReviewError

PROBLEM_TYPE = "application/problem+json"
MAX_API_BODY = 64 * 1024
"""The largest request body the API reads, in bytes (an edit's arguments fit well within it)."""

_REVIEW_STATUS = {"stale": 409, "already_decided": 409, "forbidden": 403}
_THREAD_STATUS = {
    "forbidden": 403, "not_found": 404, "busy": 409, "review_pending": 409, "limited": 429, "db_unavailable": 503,
    "not_started": 503, "too_late": 409,
}


class ApiProblem(Exception):
    """A refusal to answer as a problem document: ``status``, ``code``, ``detail`` (a sentence)."""

    def __init__(self, status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.headers = status, code, detail, headers or {}


def problem_response(problem: ApiProblem) -> JSONResponse:
    """The problem as an HTTP answer (``application/problem+json``)."""
    body = {
        "type": f"/api/v1/problems#{problem.code}", "title": HTTPStatus(problem.status).phrase, "status": problem.status,
        "detail": problem.detail, "code": problem.code,
    }
    return JSONResponse(body, status_code=problem.status, media_type=PROBLEM_TYPE, headers=problem.headers)


def problem_of(exc: ReviewError | ThreadError) -> ApiProblem:
    """The thread service's refusal as a problem, with the message the page shows for it."""
    if isinstance(exc, ReviewError):
        return ApiProblem(_REVIEW_STATUS.get(exc.code, 422), exc.code, exc.message)
    return ApiProblem(_THREAD_STATUS.get(exc.code, 400), exc.code, exc.message)


class BodyCap:
    """ASGI middleware: a request to a path under ``prefixes`` whose body passes ``limit`` bytes is
    answered 413 (a problem document) before the app reads any of it: by its ``Content-Length``
    when declared, else as the bytes arrive (they are buffered up to ``limit``, then replayed)."""

    def __init__(self, app: ASGIApp, *, prefixes: tuple[str, ...], limit: int = MAX_API_BODY) -> None:
        self.app, self.prefixes, self.limit = app, prefixes, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer 413 for a body over the limit."""
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith(self.prefixes):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await self._too_large(scope, receive, send)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = bool(message.get("more_body"))
            if size > self.limit:
                await self._too_large(scope, receive, send)
                return
        body, replayed = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        sentence = f"The request is too large (the limit is {self.limit // 1024} KB)."
        await problem_response(ApiProblem(413, "too_large", sentence))(scope, receive, send)


def first_error(errors: list[dict[str, object]]) -> str:
    """The first of pydantic's validation errors as one sentence naming the field."""
    if not errors:
        return "The request does not match the API: see /api/v1/openapi.json."
    err = errors[0]
    where = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body",))  # type: ignore[attr-defined]
    if err.get("type") == "json_invalid":
        return "The body is not valid JSON."
    return f"Field {where or 'body'}: {err.get('msg')} (see /api/v1/openapi.json)."[:500]


def json_text(value: object) -> str:
    """Compact JSON text of a stored answer."""
    return json.dumps(value, separators=(",", ":"), default=str)
