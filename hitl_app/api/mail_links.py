"""The reminder mails' one-time decision links: ``GET /mail/{token}`` asks, ``POST /mail/{token}`` decides.

Opening a link (a mail scanner does, case C25) only shows a confirmation page: what the card
proposes and a button (and, for a reject, a reason box); nothing is used or decided. The confirming
POST, from that page (same-site check, body cap), decides, and only for the person the link was
sent to: it reads the session cookie (a link forwarded to someone else, or opened signed out, asks
to sign in as that person), claims the link (``store.mail_links.use_link``: once), checks that the
review is still the one the mail showed and the card's arguments still hash the same (C24), and
decides through ``ThreadService.submit_review``, the page's one door (rights, validation, claim,
audit). A refusal gives the link back and shows the page's sentence.
"""

# Tested by: tests/integration/api/test_mail_links.py

from __future__ import annotations

import hashlib
import html
from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.ext.asyncio.session import AsyncSession
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from hitl_app.auth.cookie import SESSION_COOKIE
from hitl_app.auth.forms import BodyTooLarge, origin_key, read_fields, same_site
from hitl_app.auth.sessions import resolve_session
from hitl_app.auth.types import Principal
from hitl_app.errors import ThreadError
from hitl_app.review import MAX_MESSAGE_CHARS
from hitl_app.review.args_hash import args_hash
from hitl_app.review.shown import shown_controls
from hitl_app.review.types import AnyDecision, ApproveDecision, RejectDecision
from hitl_app.review.validate import ReviewError
from hitl_app.review.via import MAIL
from hitl_app.settings import allowed_origins
from hitl_app.store import mail_links
from hitl_app.store.tables import utcnow
from hitl_app.threads.service import ThreadService
from hitl_app.threads.views import thread_view_from_snapshot

_PAGE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">'
    "<title>hitl_app · {title}</title><style>body{{font-family:system-ui,sans-serif;max-width:560px;margin:40px auto;"
    "padding:0 16px;line-height:1.5}}code,pre{{background:#f3f3f3;padding:2px 4px;border-radius:4px;white-space:pre-wrap;"
    "overflow-wrap:anywhere}}button{{font-size:16px;padding:8px 16px;border-radius:6px}}textarea,input{{width:100%;"
    "box-sizing:border-box;font-size:15px;padding:6px}}label{{display:block;margin:8px 0}}</style></head>"
    '<body><h1>{title}</h1>{body}</body></html>'
)
STALE_LINK = "This decision link no longer works: the review was decided or replaced since the mail was sent."
GONE = "This decision link was already used or has expired. Open the review in the app to see where it stands."


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(_PAGE.format(title=html.escape(title), body=body), status_code=status)


def _thread_link(thread_id: str) -> str:
    return f'<p><a href="/thread/{html.escape(thread_id)}">Open the review in the app</a></p>'


class MailLinks:
    """The two handlers; the callables are asked per request (the runtime opens after import)."""

    def __init__(self, *, get_engine: Callable[[], AsyncEngine], get_service: Callable[[], ThreadService]) -> None:
        self.get_engine, self.get_service = get_engine, get_service
        self.allowed = frozenset(k for k in map(origin_key, allowed_origins()) if k is not None)

    async def _link(self, token: str) -> mail_links.MailLink | None:
        if not token or len(token) > 100:
            return None
        async with AsyncSession(self.get_engine(), expire_on_commit=False) as s:
            link = await mail_links.find_link(session=s, token_hash=hashlib.sha256(token.encode()).hexdigest())
        return link if link is not None and link.used_at is None and link.expires_at > utcnow() else None

    async def ask(self, request: Request) -> HTMLResponse:
        """``GET /mail/{token}``: the confirmation page (nothing is used or decided)."""
        token = request.path_params["token"]
        if (link := await self._link(token)) is None:
            return _page("Link not usable", f"<p>{html.escape(GONE)}</p>", 410)
        view = await self.get_service().graph.aget_state(self.get_service().config(link.thread_id))
        pending = _pending_card(view, link)
        if pending is None:
            return _page("Link not usable", f"<p>{html.escape(STALE_LINK)}</p>{_thread_link(link.thread_id)}", 409)
        tool, description, args = pending
        verb = "Approve" if link.decision == "approve" else "Reject"
        shown = "".join(f"<li><code>{html.escape(str(k))}</code>: <code>{html.escape(shown_controls(str(v)))[:2000]}</code></li>"
                        for k, v in args.items())
        reason = (f'<label>Reason (optional, the agent is told)<textarea name="reason" rows="3" maxlength="{MAX_MESSAGE_CHARS}">'
                  "</textarea></label>") if link.decision == "reject" else ""
        body = (f"<p>{verb} this action? Nothing is decided until you press the button.</p>"
                f"<p><strong>{html.escape(shown_controls(description or tool))}</strong></p><ul>{shown}</ul>"
                f'<form method="post" action="/mail/{html.escape(token)}">{reason}'
                f'<button type="submit" data-testid="mail-confirm">{verb}</button></form>{_thread_link(link.thread_id)}')
        return _page(f"{verb} {tool}", body)

    async def confirm(self, request: Request) -> HTMLResponse:
        """``POST /mail/{token}``: decide, for the person the link was sent to, once."""
        token = request.path_params["token"]
        if not same_site(request, self.allowed):
            return _page("Refused", "<p>Cross-site request refused.</p>", 403)
        try:
            fields, _ = await read_fields(request)
        except BodyTooLarge:
            return _page("Refused", "<p>The request is too large.</p>", 413)
        if (link := await self._link(token)) is None:
            return _page("Link not usable", f"<p>{html.escape(GONE)}</p>", 410)
        who = await resolve_session(engine=self.get_engine(), token=request.cookies.get(SESSION_COOKIE, ""))
        if who is None or who.account_id != link.account_id:
            return _sign_in_first(token, who)
        reason = " ".join((fields.get("reason") or "").split())[:MAX_MESSAGE_CHARS]
        decision: AnyDecision = ApproveDecision(type="approve") if link.decision == "approve" else RejectDecision(
            type="reject", message=reason or None)
        hashed = hashlib.sha256(token.encode()).hexdigest()
        async with AsyncSession(self.get_engine(), expire_on_commit=False) as s:
            if not await mail_links.use_link(session=s, token_hash=hashed, now=utcnow()):
                return _page("Link not usable", f"<p>{html.escape(GONE)}</p>", 410)
        try:
            message = await self._decide(link, decision, who)
        except (ReviewError, ThreadError) as exc:
            async with AsyncSession(self.get_engine(), expire_on_commit=False) as s:
                await mail_links.release_link(session=s, token_hash=hashed)
            return _page("Not decided", f"<p>{html.escape(exc.message)}</p>{_thread_link(link.thread_id)}", 409)
        return _page("Decided", f'<p data-testid="mail-decided">{html.escape(message)}</p>{_thread_link(link.thread_id)}')

    async def _decide(self, link: mail_links.MailLink, decision: AnyDecision, who: Principal) -> str:
        """Check the review and the arguments are still those of the mail, then submit; the outcome in words."""
        service = self.get_service()
        view = await service.load(link.thread_id, viewer=who)
        review = view.pending
        if review is None or review.interrupt_id != link.interrupt_id or link.action_index >= len(review.action_requests):
            raise ReviewError(STALE_LINK, code="stale")
        action = review.action_requests[link.action_index]
        if args_hash(action.name, action.args) != link.args_hash:
            raise ReviewError("The arguments of this card changed since the mail was sent: open the review in the app.",
                              code="stale")
        decisions: list[AnyDecision | None] = [None] * len(review.action_requests)
        decisions[link.action_index] = decision
        run_id = await service.submit_review(link.thread_id, link.interrupt_id, decisions, person=who, via=MAIL)
        done = "Approved" if decision.type == "approve" else "Rejected"
        return f"{done}: {action.name}. " + ("The agent goes on." if run_id else "Your decision is recorded; the review "
                                                                              "waits for the other cards or approvals.")


def _pending_card(state: object, link: mail_links.MailLink) -> tuple[str, str, dict[str, object]] | None:
    """(tool, description, arguments) of the link's card when its review is still pending with the same arguments."""
    review = thread_view_from_snapshot(link.thread_id, state).pending
    if review is None or review.interrupt_id != link.interrupt_id or link.action_index >= len(review.action_requests):
        return None
    action = review.action_requests[link.action_index]
    return (action.name, action.description, dict(action.args)) if args_hash(action.name, action.args) == link.args_hash else None


def _sign_in_first(token: str, who: Principal | None) -> HTMLResponse:
    """The link is for another person (forwarded) or nobody is signed in: sign in as its person."""
    note = ("This link was sent to someone else: it only works for the person it was mailed to. "
            if who is not None else "Sign in to confirm this decision. ")
    form = ('<form method="post" action="/auth/sign-in">'
            f'<input type="hidden" name="next" value="/mail/{html.escape(token)}">'
            '<label>Email<input name="email" type="email" autocomplete="username" required></label>'
            '<label>Password<input name="password" type="password" autocomplete="current-password" required></label>'
            '<button type="submit">Sign in</button></form>')
    return _page("Sign in to decide", f"<p>{html.escape(note)}Nothing was decided.</p>{form}", 403 if who else 401)


def mail_link_app(*, get_engine: Callable[[], AsyncEngine], get_service: Callable[[], ThreadService]) -> Starlette:
    """The two routes as a Starlette app; give it to ``rx.App(api_transformer=...)`` as the sign-in
    routes are (``get_engine``: the app database's async engine; ``get_service``: the thread service)."""
    h = MailLinks(get_engine=get_engine, get_service=get_service)
    return Starlette(routes=[
        Route("/mail/{token}", h.ask, methods=["GET"]),
        Route("/mail/{token}", h.confirm, methods=["POST"]),
    ])
