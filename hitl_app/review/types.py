"""The HITL domain words as types: action request, review config, pending review, decision.

Shapes follow LangChain 1.5's ``HumanInTheLoopMiddleware`` in batched mode (checked by running
code in ../shared/reference/langgraph-hitl/FINDINGS.md §2-§3): an interrupt value is
``{"action_requests": [{"name", "args", "description"}], "review_configs": [{"action_name",
"allowed_decisions"}]}`` and the resume value is ``{"decisions": [...]}``, one decision per action
request, in order.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

DecisionType = Literal["approve", "edit", "reject", "respond"]
DECISION_TYPES: tuple[str, ...] = ("approve", "edit", "reject", "respond")

MAX_EDIT_JSON_CHARS = 64 * 1024
"""Largest edited-arguments JSON text accepted from a reviewer, in characters."""
MAX_MESSAGE_CHARS = 20_000
"""Largest composer message, reject reason or respond message, in characters."""
MAX_PASTE_CHARS = 2_000_000
"""Browser-side cap on any text box (``maxlength``). Above the limits above, so an oversize paste
reaches the server and is refused with its real size; below the websocket's 8 MiB message limit
(``REFLEX_SOCKET_MAX_HTTP_BUFFER_SIZE`` in rxconfig.py) even at 4 bytes a character, so the
connection never drops."""


class ActionRequest(BaseModel):
    """One proposed tool call that needs a human: tool ``name``, its ``args`` and a ``description``."""

    model_config = ConfigDict(frozen=True)

    name: str
    args: dict[str, Any]
    description: str = ""


class ReviewConfig(BaseModel):
    """What a reviewer may do with the action request at the same index."""

    model_config = ConfigDict(frozen=True)

    action_name: str
    allowed_decisions: tuple[DecisionType, ...]


class PendingReview(BaseModel):
    """The interrupt a thread is waiting on, as read from the checkpoint.

    ``tool_call_ids[i]`` is the id of the tool call behind ``action_requests[i]`` (matched from the
    last assistant message; ``None`` when it cannot be matched, e.g. a custom agent's interrupt).
    """

    model_config = ConfigDict(frozen=True)

    thread_id: str
    interrupt_id: str
    action_requests: tuple[ActionRequest, ...]
    review_configs: tuple[ReviewConfig, ...]
    tool_call_ids: tuple[str | None, ...] = ()
    checkpoint_id: str | None = None


class ApproveDecision(BaseModel):
    """Run the tool call as proposed."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["approve"]


class EditedAction(BaseModel):
    """The tool call as the reviewer wants it run (same tool name, new ``args``)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    args: dict[str, Any]


class EditDecision(BaseModel):
    """Run the tool with the reviewer's arguments."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["edit"]
    edited_action: EditedAction


class RejectDecision(BaseModel):
    """Do not run the tool; ``message`` (optional) is the reason given to the model."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["reject"]
    message: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)


class RespondDecision(BaseModel):
    """Do not run the tool; the reviewer's ``message`` is the tool's result (e.g. ask_user)."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["respond"]
    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)


Decision = Annotated[
    ApproveDecision | EditDecision | RejectDecision | RespondDecision, Field(discriminator="type")
]


def decision_payload(decision: ApproveDecision | EditDecision | RejectDecision | RespondDecision) -> dict[str, Any]:
    """The plain dict LangChain's middleware expects for one decision (``None`` fields dropped)."""
    return decision.model_dump(exclude_none=True)


class AuditView(BaseModel):
    """What the UI shows under a decided tool call: who decided what, when, after how long."""

    decision_type: DecisionType
    reviewer: str
    decided_at: datetime
    waited_seconds: float
    message: str | None = None
