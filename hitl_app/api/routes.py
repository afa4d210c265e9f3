"""The decision API: ``/api/v1`` routes on the app's own server (a FastAPI app given to Reflex as an
``api_transformer``, as ``hitl_app.auth.http`` gives its sign-in routes).

- ``GET /api/v1/reviews``: the cards waiting for the caller (scope ``read``).
- ``GET /api/v1/reviews/{thread_id}``: a thread's pending review: cards, arguments and their hashes,
  allowed decisions, the caller's rights, deadline, who decided what so far (scope ``read``).
- ``POST /api/v1/reviews/{thread_id}/decisions``: decide one card (scope ``decide``), naming the
  review, the card and the hash of the arguments read; ``Idempotency-Key`` makes a retry safe.
- ``GET /api/v1/openapi.json``: the OpenAPI document.

Every call presents ``Authorization: Bearer hitl_pat_...`` (``hitl_app.auth.api_tokens``) and acts
with exactly the token owner's rights: reads through ``ThreadService.load`` and the inbox, decisions
through ``ThreadService.submit_review``, the page's one door. Bodies over ``MAX_API_BODY`` get 413
unread; every refusal is a problem document (``hitl_app.api.problems``). No cookies are read, so
another site cannot make a browser call it (no CSRF).
"""

# Tested by: tests/integration/api/test_decision_api.py


import hashlib
import json
import re
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response

from hitl_app.api.models import CardOut, DecisionIn, DecisionOut, Problem, ReviewOut, WaitingCard, WaitingList
from hitl_app.api.problems import ApiProblem, BodyCap, first_error, json_text, problem_of, problem_response
from hitl_app.auth.api_tokens import ApiTokenRefused, TokenCaller, resolve_api_token
from hitl_app.errors import ThreadError
from hitl_app.review.args_hash import args_hash
from hitl_app.review.types import AnyDecision
from hitl_app.review.validate import ReviewError
from hitl_app.review.via import API
from hitl_app.reviewers.inbox import ReviewInbox
from hitl_app.store import api_tokens as keys
from hitl_app.store.tables import utcnow
from hitl_app.threads.service import ThreadService
from hitl_app.threads.views import ThreadView

PREFIX = "/api/v1"
MAX_KEY = 200
"""The longest ``Idempotency-Key`` accepted, in characters."""
_KNOWN = re.compile(r"reviews(/[^/]+(/decisions)?)?|openapi\.json")
"""The API's own paths under ``/api/v1/`` (another method on one of them is 405, not 404)."""
WORKING_STALE_S = 120.0
"""A key still "working" after this many seconds was left by a worker that died: a retry takes it over."""
_GONE = ("stale", "no_review")
CardFacts = tuple[Mapping[str, Any], Mapping[str, Any]]
"""``(risks, origins)``: tool name -> ``ToolRisk`` and tool name -> ``ToolOrigin`` (``review_out``)."""
"""Refusals of a decision whose review is no longer the pending one: "already decided" when it was claimed."""
_PROBLEMS: dict[int | str, dict[str, Any]] = {
    s: {"model": Problem, "content": {"application/problem+json": {}}} for s in (400, 401, 403, 404, 409, 413, 422, 429)
}


class DecisionApi:
    """The handlers; the callables are asked per request (the runtime opens after import)."""

    def __init__(
        self, *, get_engine: Callable[[], AsyncEngine], get_service: Callable[[], ThreadService],
        get_inbox: Callable[[], ReviewInbox], per_minute: Callable[[], int],
        get_card_facts: Callable[[], CardFacts] = lambda: ({}, {}),
    ) -> None:
        self.get_engine, self.get_service, self.get_inbox, self.per_minute = get_engine, get_service, get_inbox, per_minute
        self.get_card_facts = get_card_facts

    async def caller(
        self, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(HTTPBearer(auto_error=False))]
    ) -> TokenCaller:
        """The token's caller (a dependency); raises ``ApiProblem`` 401/429."""
        try:
            return await resolve_api_token(
                engine=self.get_engine(), token=credentials.credentials if credentials else "", per_minute=self.per_minute()
            )
        except ApiTokenRefused as exc:
            headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else {"WWW-Authenticate": "Bearer"}
            code = "rate_limited" if exc.status == 429 else "unauthorized"
            raise ApiProblem(exc.status, code, str(exc), headers) from None

    async def waiting(self, caller: TokenCaller, after: str, limit: int) -> WaitingList:
        """``GET /reviews``: a page of the cards waiting for the caller."""
        _scope(caller, "read")
        try:
            page = await self.get_inbox().page_for(caller.principal, after=after, limit=limit)
        except ValueError:
            raise ApiProblem(400, "bad_cursor", "That cursor is not one this API gave out: start without ?after=.") from None
        items = [
            WaitingCard(
                thread_id=i.pending.thread_id, thread_title=i.pending.thread_title, review_id=i.pending.interrupt_id,
                card=i.pending.action_index, tool=i.tool_name, args=dict(i.args), args_hash=args_hash(i.tool_name, i.args),
                asked_by=i.pending.asked_by, requested_at=i.pending.requested_at, waited_seconds=i.waited_seconds,
                approvals_left=i.approvals_left, approvals_needed=i.approvals_needed,
            )
            for i in page.items
        ]
        return WaitingList(items=items, total=page.total, next=page.next_after)

    async def _view(self, caller: TokenCaller, thread_id: str) -> ThreadView:
        try:
            view = await self.get_service().load(thread_id, viewer=caller.principal)
        except (ReviewError, ThreadError) as exc:
            raise problem_of(exc) from None
        if view.pending is None:
            raise ApiProblem(404, "no_review", "No review waits on this thread now: it was decided, or none was asked.")
        return view

    async def read(self, caller: TokenCaller, thread_id: str) -> ReviewOut:
        """``GET /reviews/{thread_id}``: the thread's pending review as the caller sees it."""
        _scope(caller, "read")
        view = await self._view(caller, thread_id)
        return review_out(view, *self.get_card_facts())

    async def decide(self, caller: TokenCaller, thread_id: str, body: DecisionIn, key: str | None) -> Response:
        """``POST /reviews/{thread_id}/decisions``: one decision, through ``submit_review``."""
        _scope(caller, "decide")
        if key is None:
            return JSONResponse((await self._decide(caller, thread_id, body)).model_dump(mode="json"))
        if not key or len(key) > MAX_KEY:
            raise ApiProblem(400, "bad_idempotency_key", f"An Idempotency-Key is 1 to {MAX_KEY} characters.")
        wanted = hashlib.sha256(json_text([thread_id, body.model_dump(mode="json")]).encode()).hexdigest()
        async with AsyncSession(self.get_engine(), expire_on_commit=False) as s:
            seen = await keys.claim_key(session=s, token_id=caller.token_id, key=key, request_hash=wanted)
            if seen is not None and seen.state == "working" and utcnow() - seen.created_at > timedelta(seconds=WORKING_STALE_S):
                # its worker died mid-request: try again (a decision it made is refused now as already decided)
                await keys.drop_key(session=s, token_id=caller.token_id, key=key)
                seen = await keys.claim_key(session=s, token_id=caller.token_id, key=key, request_hash=wanted)
        if seen is not None:
            return _replay(seen, wanted)
        try:
            out = await self._decide(caller, thread_id, body)
        except BaseException:
            async with AsyncSession(self.get_engine(), expire_on_commit=False) as s:
                await keys.drop_key(session=s, token_id=caller.token_id, key=key)
            raise
        answer = out.model_dump(mode="json")
        async with AsyncSession(self.get_engine(), expire_on_commit=False) as s:
            await keys.finish_key(session=s, token_id=caller.token_id, key=key, status=200, answer=json_text(answer))
        return JSONResponse(answer)

    async def _decide(self, caller: TokenCaller, thread_id: str, body: DecisionIn) -> DecisionOut:
        try:
            return await self._decide_once(caller, thread_id, body)
        except ApiProblem as problem:
            if problem.code in _GONE:  # the review it names was decided meanwhile (the page, another call): say by whom
                try:
                    await self.get_service().desk.refuse_if_decided(body.review_id, caller.principal)
                except ReviewError as exc:
                    raise problem_of(exc) from None
            raise

    async def _decide_once(self, caller: TokenCaller, thread_id: str, body: DecisionIn) -> DecisionOut:
        view = await self._view(caller, thread_id)
        review = view.pending
        assert review is not None
        if review.interrupt_id != body.review_id:
            raise ApiProblem(409, "stale", "This review was already decided or replaced by a newer one: read it again.")
        if body.card >= len(review.action_requests):
            raise ApiProblem(422, "no_card", f"This review has {len(review.action_requests)} card(s): card is 0 to "
                                              f"{len(review.action_requests) - 1}.")
        if args_hash(review.action_requests[body.card].name, review.action_requests[body.card].args) != body.args_hash:
            tool = review.action_requests[body.card].name
            raise ApiProblem(409, "stale_args", f"The arguments of card {body.card} ({tool}) are not the ones you were shown "
                                                "(they changed since): read the review again and decide on what it shows now.")
        decisions: list[AnyDecision | None] = [None] * len(review.action_requests)
        decisions[body.card] = body.decision
        try:
            run_id = await self.get_service().submit_review(
                thread_id, body.review_id, decisions, person=caller.principal, via=API)
        except (ReviewError, ThreadError) as exc:
            raise problem_of(exc) from None
        return DecisionOut(
            thread_id=thread_id, review_id=body.review_id, card=body.card, decision=body.decision.type,
            state="resumed" if run_id else "waiting", run_id=run_id,
        )


def review_out(view: ThreadView, risks: Mapping[str, Any] | None = None, origins: Mapping[str, Any] | None = None) -> ReviewOut:
    """A loaded thread's pending review as the API shows it (``view.pending`` is set).

    ``risks``: tool name -> ``ToolRisk`` (the policy's ``risk``/``risk_note``); ``origins``: tool name ->
    ``ToolOrigin`` (an MCP tool's server, its name there, hint words, trust): what the page's card shows
    in its badges, so a client that shows the card to a person can warn as the page does."""
    review = view.pending
    assert review is not None
    desk = view.desk
    cards = []
    for i, (action, config) in enumerate(zip(review.action_requests, review.review_configs, strict=True)):
        status = view.cards[i] if i < len(view.cards) else None
        cards.append(CardOut(
            card=i, tool=action.name, description=action.description, args=action.args,
            args_hash=args_hash(action.name, action.args),
            allowed_decisions=list(config.allowed_decisions), you_may=list(status.allowed) if status else [],
            standing=status.standing if status else "waiting", progress=status.progress if status else "",
            deciders=list(status.deciders) if status else [], who=status.who if status else "",
            note=status.note if status else "", approvals_needed=status.needed if status else 1,
            approvals_left=status.remaining if status else 0, yours=bool(status and status.yours),
            **_badges((risks or {}).get(action.name), (origins or {}).get(action.name)),
        ))
    return ReviewOut(
        thread_id=view.thread_id, review_id=review.interrupt_id, read_only=view.read_only,
        requested_at=desk.requested_at if desk else None, deadline_at=desk.deadline_at if desk else None,
        on_timeout=desk.on_timeout if desk else "", escalated_to=desk.escalated_to if desk else "",
        undo_until=desk.undo_until if desk else None, cards=cards,
    )


def _badges(risk: Any, origin: Any) -> dict[str, Any]:
    """``CardOut``'s risk and MCP fields from a ``ToolRisk`` and a ``ToolOrigin`` (either may be None)."""
    return {
        "risk": getattr(risk, "level", "") or "", "risk_note": getattr(risk, "note", "") or "",
        "mcp_server": getattr(origin, "server", "") or "", "server_tool": getattr(origin, "tool", "") or "",
        "hints": list(getattr(origin, "hints", ()) or ()), "hints_trusted": bool(getattr(origin, "trusted", False)),
    }


def _scope(caller: TokenCaller, scope: str) -> None:
    try:
        caller.require(scope)
    except ApiTokenRefused as exc:
        raise ApiProblem(exc.status, "scope", str(exc)) from None


def _replay(seen: keys.ApiIdempotency, wanted: str) -> Response:
    if seen.request_hash != wanted:
        raise ApiProblem(422, "idempotency_key_reused", "This Idempotency-Key was used for another request: use a new key.")
    if seen.state != "done":
        raise ApiProblem(409, "in_progress", "A request with this Idempotency-Key is still being worked on; try again shortly.")
    return JSONResponse(json.loads(seen.answer), status_code=seen.status, headers={"Idempotent-Replayed": "true"})


def decision_api(
    *, get_engine: Callable[[], AsyncEngine], get_service: Callable[[], ThreadService], get_inbox: Callable[[], ReviewInbox],
    per_minute: Callable[[], int], get_card_facts: Callable[[], CardFacts] = lambda: ({}, {}),
) -> FastAPI:
    """The API as a FastAPI app (its OpenAPI document at ``/api/v1/openapi.json``, no docs pages);
    give it to ``rx.App(api_transformer=...)``, then wrap with ``BodyCap`` (``api_body_cap``).

    Args:
        get_engine: the app database's async engine (each callable is called per request).
        get_service: the thread service.
        get_inbox: the review inbox.
        per_minute: requests a token may make per minute (``HITL_API_REQUESTS_PER_MINUTE``).
        get_card_facts: ``(risks, origins)`` of the running agent (``review_out``), for the cards' badges.
    """
    h = DecisionApi(get_engine=get_engine, get_service=get_service, get_inbox=get_inbox, per_minute=per_minute,
                    get_card_facts=get_card_facts)
    app = FastAPI(
        title="hitl_app decision API", version="1.0.0", openapi_url=f"{PREFIX}/openapi.json", docs_url=None,
        redoc_url=None, description="List, read and decide the reviews waiting for you. Authenticate with a personal "
        "API token (Authorization: Bearer hitl_pat_...) made on your account page.",
    )
    Caller = Annotated[TokenCaller, Depends(h.caller)]

    @app.get(f"{PREFIX}/reviews", response_model=WaitingList, responses=_PROBLEMS, summary="Cards waiting for you")
    async def list_reviews(caller: Caller, after: str = "", limit: Annotated[int, Query(ge=1, le=200)] = 50) -> WaitingList:
        return await h.waiting(caller, after, limit)

    @app.get(f"{PREFIX}/reviews/{{thread_id}}", response_model=ReviewOut, responses=_PROBLEMS, summary="A pending review")
    async def read_review(caller: Caller, thread_id: str) -> ReviewOut:
        return await h.read(caller, thread_id)

    @app.post(f"{PREFIX}/reviews/{{thread_id}}/decisions", response_model=DecisionOut, responses=_PROBLEMS,
              summary="Decide one card")
    async def decide(
        caller: Caller, thread_id: str, body: DecisionIn,
        idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
    ) -> Response:
        return await h.decide(caller, thread_id, body, idempotency_key)

    @app.api_route(f"{PREFIX}/{{rest:path}}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False)
    async def unknown(rest: str) -> Response:
        if _KNOWN.fullmatch(rest):
            raise ApiProblem(405, "method_not_allowed", "This route does not take that method: see /api/v1/openapi.json.")
        raise ApiProblem(404, "not_found", "There is no such API route: see /api/v1/openapi.json.")

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> Response:
        return problem_response(ApiProblem(exc.status_code, "http", str(exc.detail)))

    @app.exception_handler(ApiProblem)
    async def on_problem(request: Request, exc: ApiProblem) -> Response:
        return problem_response(exc)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> Response:
        errors = list(exc.errors())
        bad_json = bool(errors) and errors[0].get("type") == "json_invalid"
        return problem_response(ApiProblem(400 if bad_json else 422, "bad_json" if bad_json else "invalid", first_error(errors)))

    return app


def api_body_cap(asgi_app: Any) -> BodyCap:
    """The API's body cap around the whole backend (``BodyCap`` on ``/api/`` and ``/mail/`` paths)."""
    return BodyCap(asgi_app, prefixes=(f"{PREFIX}/", "/mail/"))
