"""What a pending review's cards show beyond the decisions: time left, grants, the undo window."""

# Tested by: tests/integration/desk/test_review_desk.py - the desk part of a loaded thread

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from hitl_app.review.decided import DecidedLine


class DeskView(BaseModel):
    """The desk's part of a thread's pending review (times aware UTC, from the server's clock).

    Attributes:
        server_now: when this view was read (the page counts from here, not from its own clock).
        requested_at: when the review was raised (None: not recorded yet).
        deadline_at: when the first card runs out of time (None: no deadline).
        deadline_tool: the tool whose deadline it is.
        on_timeout: ``"reject"`` or ``"escalate"``.
        escalate_to: the role it goes to on escalation.
        escalated_to: set once the deadline passed and the review was escalated (that role decides).
        undo_until: the end of the undo window of a submitted review (None: no window open).
        undo_by: the display name of who submitted it.
        viewer_may_undo: True when the viewing person may undo it (the submitter, or an admin).
        overtaken_by: ``undo_by`` when someone other than the viewing person submitted (``""`` else).
        decided: while the undo window is open, each card's decision as the server will resume
            with it (``review.decided``), for everyone viewing the thread; ``[]`` otherwise.
        grant_scopes: per card, the grant scopes the viewing person may add with an approval.
        grant_notes: per card, why no grant is offered (``""`` when some are, or the tool needs none).
        owner_name: the display name of the thread's owner (whose threads a ``person`` grant
            covers; ``""`` when unknown).
        viewer_is_owner: True when the viewing person owns the thread ("all my threads").
    """

    server_now: datetime
    requested_at: datetime | None = None
    deadline_at: datetime | None = None
    deadline_tool: str = ""
    on_timeout: str = "reject"
    escalate_to: str = ""
    escalated_to: str = ""
    undo_until: datetime | None = None
    undo_by: str = ""
    viewer_may_undo: bool = False
    overtaken_by: str = ""
    decided: list[DecidedLine] = []
    grant_scopes: list[list[str]] = []
    grant_notes: list[str] = []
    owner_name: str = ""
    viewer_is_owner: bool = True


class GrantRow(BaseModel):
    """One grant as the Grants page lists it (times aware UTC).

    Attributes:
        id: the grant's id.
        granted_by: who made it (display name at the time).
        scope: the scope in words (``"this tool in this thread"``).
        tool: the tool it covers.
        thread_id: the thread of a ``call``/``thread`` grant (``""`` for ``person``).
        args: the exact arguments of a ``call`` grant as compact JSON (``""`` otherwise).
        made / ends: when it was made and when it ends.
        revoked_at: when it was revoked (None: not revoked); ``revoked_by`` who did.
        uses: how many calls it approved; ``last_used`` the latest.
        status: ``"active"``, ``"expired"`` or ``"revoked"``.
        can_revoke: the viewer may revoke it (active, and they made it, own the threads, or are an admin).
    """

    id: int
    granted_by: str
    scope: str
    tool: str
    thread_id: str = ""
    args: str = ""
    made: datetime
    ends: datetime
    revoked_at: datetime | None = None
    revoked_by: str = ""
    uses: int = 0
    last_used: datetime | None = None
    status: str = "active"
    can_revoke: bool = False
