"""The HITL domain words as types: action request, review config, pending review, decision.

Shapes follow LangChain 1.5's ``HumanInTheLoopMiddleware`` in batched mode (checked against
langchain 1.5.2's ``human_in_the_loop.py`` by running it): an interrupt value is
``{"action_requests": [{"name", "args", "description"}], "review_configs": [{"action_name",
"allowed_decisions"}]}`` and the resume value is ``{"decisions": [...]}``, one decision per action
request, in order.

The decision vocabulary (``DecisionType``) is declared here once; ``DECISION_STYLES`` gives the
words and icons a UI derives its buttons, verbs and filters from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

DecisionType = Literal["approve", "edit", "reject", "respond"]
"""What a reviewer may decide about one action request (langchain 1.5.2 ``DecisionType``)."""
DECISION_TYPES: tuple[DecisionType, ...] = get_args(DecisionType)
"""The decision types in display order: ``("approve", "edit", "reject", "respond")``."""


@dataclass(frozen=True)
class DecisionStyle:
    """How one decision type is shown.

    Attributes:
        label: the button text ("Approve").
        past: the verb in the audit line and tool row ("approved" by Dana).
        icon: a lucide icon name ("check").
        color: a Radix colour scale name ("green").
    """

    label: str
    past: str
    icon: str
    color: str


DECISION_STYLES: dict[DecisionType, DecisionStyle] = {
    "approve": DecisionStyle("Approve", "approved", "check", "green"),
    "edit": DecisionStyle("Edit", "edited", "pencil", "blue"),
    "reject": DecisionStyle("Reject", "rejected", "x", "red"),
    "respond": DecisionStyle("Respond", "answered", "message-circle", "violet"),
}
"""One ``DecisionStyle`` per ``DecisionType`` (same order as ``DECISION_TYPES``)."""

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

    @field_validator("args", "description", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return {} if info.field_name == "args" else ""
        return value


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


AnyDecision = ApproveDecision | EditDecision | RejectDecision | RespondDecision
"""One reviewer decision (the plain union; see ``Decision`` for the parsing form)."""

Decision = Annotated[AnyDecision, Field(discriminator="type")]
"""``AnyDecision`` discriminated by ``type``: ``TypeAdapter(Decision).validate_python(raw)``."""


def decision_payload(decision: AnyDecision) -> dict[str, Any]:
    """The plain dict LangChain's middleware expects for one decision (``None`` fields dropped).

    e.g. ``{"type": "edit", "edited_action": {"name": "send_email", "args": {...}}}``.
    """
    return decision.model_dump(exclude_none=True)


def resume_value(decisions: list[AnyDecision]) -> dict[str, Any]:
    """The resume value for one HITL interrupt: ``{"decisions": [<decision_payload>, ...]}``.

    Build it at the last moment, inside ``Command(resume={interrupt_id: resume_value(...)})``.
    """
    return {"decisions": [decision_payload(d) for d in decisions]}


def executed_args(decision: AnyDecision, proposed: dict[str, Any]) -> dict[str, Any] | None:
    """The arguments the tool runs with after ``decision``: the edited ones, the ``proposed`` ones
    for an approval, ``None`` when the tool does not run (reject, respond)."""
    if isinstance(decision, EditDecision):
        return decision.edited_action.args
    if isinstance(decision, ApproveDecision):
        return proposed
    return None


def decision_message(decision: AnyDecision) -> str | None:
    """The reviewer's text of a reject (the reason, optional) or respond (the answer), else ``None``."""
    if isinstance(decision, RejectDecision | RespondDecision):
        return decision.message
    return None


class HITLRequest(BaseModel):
    """An interrupt value raised by ``HumanInTheLoopMiddleware``: the two parallel lists.

    ``review_configs[i]`` belongs to ``action_requests[i]`` (same tool name). Extra keys are
    ignored (a later langchain may add some); a missing, malformed or unparallel list makes
    ``parse_hitl_request`` return ``None``.
    """

    model_config = ConfigDict(frozen=True)

    action_requests: tuple[ActionRequest, ...] = Field(min_length=1)
    review_configs: tuple[ReviewConfig, ...]


def parse_hitl_request(value: Any) -> HITLRequest | None:
    """``value`` (an interrupt's value) as a ``HITLRequest``, or ``None`` when it is not one.

    ``None`` covers a custom agent's own ``interrupt("...")`` (any shape), a value with no
    ``action_requests``, and a value whose lists do not validate (e.g. an action request without
    ``name``, review configs that do not match the action requests one to one, an unknown decision
    type). Never raises.
    """
    if not isinstance(value, dict) or "action_requests" not in value:
        return None
    try:
        request = HITLRequest.model_validate(value)
    except ValidationError:
        return None
    actions, configs = request.action_requests, request.review_configs
    if len(configs) != len(actions) or any(c.action_name != a.name for a, c in zip(actions, configs, strict=True)):
        return None
    return request


def describe_interrupt(value: Any, limit: int = 200) -> str:
    """A short, readable rendering of an interrupt value this app cannot show as approval cards."""
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
