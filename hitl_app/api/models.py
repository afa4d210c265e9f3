"""The decision API's JSON shapes (pydantic models; the OpenAPI document is made from them).

Times are ISO 8601 in UTC. A card is named by its place in the review (``card``, from 0) and its
arguments by ``args_hash`` (``hitl_app.review.args_hash``): a decision repeats both, with the
``review_id`` it read, so a decision on arguments that changed since is refused.
"""

# Tested by: tests/integration/api/test_decision_api.py

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hitl_app.review.types import Decision


class WaitingCard(BaseModel):
    """One card waiting for the caller (``GET /api/v1/reviews``)."""

    thread_id: str
    thread_title: str
    review_id: str = Field(description="The pending review (its interrupt id); a decision names it.")
    card: int = Field(description="The card's place in the review, from 0.")
    tool: str
    args: dict[str, Any]
    args_hash: str = Field(description="SHA-256 of the card's tool name and arguments; a decision repeats it.")
    asked_by: str
    requested_at: datetime
    waited_seconds: float
    approvals_left: int
    approvals_needed: int


class WaitingList(BaseModel):
    """A page of the cards waiting for the caller, oldest review first; ``next`` is the cursor for
    the next page (``?after=``), ``""`` when there is none."""

    items: list[WaitingCard]
    total: int
    next: str


class CardOut(BaseModel):
    """One card of a review as the caller sees it: what it proposes and where it stands."""

    card: int
    tool: str
    description: str
    args: dict[str, Any]
    args_hash: str
    allowed_decisions: list[str] = Field(description="What the policy allows on this card at all.")
    you_may: list[str] = Field(description="What the caller may decide on it now (their rights, as on the page).")
    standing: str = Field(description="open (the caller's to decide), waiting (someone else's turn) or complete.")
    progress: str
    deciders: list[str] = Field(description="Who decided what so far, e.g. 'Dana approved'.")
    who: str = Field(description="Who may decide it, in words.")
    note: str = Field(description="Why the caller may not decide it, when they may not.")
    approvals_needed: int
    approvals_left: int
    yours: bool = Field(description="The caller's own decision is recorded on it.")
    risk: str = Field("", description="The policy's risk level (low, medium, high; '' unset), as the page's badge.")
    risk_note: str = Field("", description="The policy's one-line note on that risk.")
    mcp_server: str = Field("", description="The MCP server the call goes to ('' for a built-in tool).")
    server_tool: str = Field("", description="The tool's own name on that MCP server.")
    hints: list[str] = Field(default_factory=list, description="The server's hints in words (destructive, reaches outside, ...).")
    hints_trusted: bool = Field(False, description="Whether the policy trusts that server's hints.")


class ReviewOut(BaseModel):
    """The pending review of a thread (``GET /api/v1/reviews/{thread_id}``)."""

    thread_id: str
    review_id: str
    read_only: bool = Field(description="True when the caller does not own the thread.")
    requested_at: datetime | None
    deadline_at: datetime | None = Field(description="When the first card runs out of time (null: no deadline).")
    on_timeout: str
    escalated_to: str
    undo_until: datetime | None
    cards: list[CardOut]


class DecisionIn(BaseModel):
    """One decision on one card (``POST /api/v1/reviews/{thread_id}/decisions``).

    ``decision`` is ``{"type": "approve"}``, ``{"type": "reject", "message": "why"}``,
    ``{"type": "edit", "edited_action": {"name": "<tool>", "args": {...}}}`` or
    ``{"type": "respond", "message": "answer"}``.
    """

    model_config = ConfigDict(extra="forbid")

    review_id: str = Field(max_length=200)
    card: int = Field(ge=0, le=10_000)
    args_hash: str = Field(min_length=64, max_length=64)
    decision: Decision


class DecisionOut(BaseModel):
    """What a decision did: ``state`` is ``resumed`` (the run goes on; ``run_id``) or ``waiting``
    (recorded; other cards or approvals are still open, or an undo window holds the run)."""

    thread_id: str
    review_id: str
    card: int
    decision: str
    state: str
    run_id: str | None


class Problem(BaseModel):
    """A refusal (``application/problem+json``): ``detail`` is the sentence the page shows."""

    type: str
    title: str
    status: int
    detail: str
    code: str
