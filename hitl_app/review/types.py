"""The HITL domain words as types: action request, review config, pending review, decision.

Shapes follow LangChain 1.5's ``HumanInTheLoopMiddleware`` in batched mode (checked against
langchain 1.5.2's ``human_in_the_loop.py`` by running it): an interrupt value is
``{"action_requests": [{"name", "args", "description"}], "review_configs": [{"action_name",
"allowed_decisions"}]}`` and the resume value is ``{"decisions": [...]}``, one decision per action
request, in order.

The decision vocabulary (``DecisionType``) is declared here once; ``DECISION_STYLES`` gives the
words, icons, colours and keyboard keys every UI map derives from (buttons, verbs, the state
line, the shortcut list, the audit filter, the metrics' outcomes and their chart colours).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

DecisionType = Literal["approve", "edit", "reject", "respond"]
"""What a reviewer may decide about one action request (langchain 1.5.2 ``DecisionType``)."""
DECISION_TYPES: tuple[DecisionType, ...] = get_args(DecisionType)
"""The decision types in display order: ``("approve", "edit", "reject", "respond")``."""
APPROVE, EDIT, REJECT, RESPOND = DECISION_TYPES
"""Each decision type by name, for code that treats one of them specially (an edit opens the
editor, a respond needs an answer)."""


@dataclass(frozen=True)
class DecisionStyle:
    """How one decision type is shown.

    Attributes:
        label: the button text ("Approve").
        past: the verb in the audit line and tool row ("approved" by Dana).
        icon: a lucide icon name ("check").
        color: a Radix colour scale name ("green").
        key: the keyboard shortcut on a focused card, one lower-case letter ("a").
        picked: the card's state line once this is the draft's choice ("approved").
        key_help: what the shortcut does, as the shortcut list says it.
    """

    label: str
    past: str
    icon: str
    color: str
    key: str
    picked: str
    key_help: str


DECISION_STYLES: dict[DecisionType, DecisionStyle] = {
    "approve": DecisionStyle("Approve", "approved", "check", "green", "a", "approved", "Approve the focused card"),
    "edit": DecisionStyle("Edit", "edited", "pencil", "blue", "e", "edited", "Edit its arguments"),
    "reject": DecisionStyle("Reject", "rejected", "x", "red", "r", "rejected", "Reject it (the focus goes to the reason box)"),
    "respond": DecisionStyle(
        "Respond", "answered", "message-circle", "violet", "s", "answer chosen", "Respond (the focus goes to the answer box)"
    ),
}
"""One ``DecisionStyle`` per ``DecisionType`` (same order as ``DECISION_TYPES``)."""

MAX_EDIT_JSON_CHARS = 64 * 1024
"""Largest edited-arguments JSON text accepted from a reviewer, in characters."""
MAX_MESSAGE_CHARS = 20_000
"""Largest composer message, reject reason or respond message, in characters."""
MAX_PASTE_CHARS = 300_000
"""Browser-side cap on any text box (``maxlength``) and on what the JSON editor sends, in UTF-16
code units. Above every server-side text limit (the largest is 128 KiB of kept choices), so an
oversize paste reaches the server and is refused with a message; ``MAX_EVENT_BYTES`` holds it at
the widest JSON encoding, so the connection never drops."""
MAX_EVENT_BYTES = 6 * MAX_PASTE_CHARS + 512 * 1024
"""The websocket's largest message (``REFLEX_SOCKET_MAX_HTTP_BUFFER_SIZE`` in rxconfig.py), in
bytes: the largest legitimate event is one text box at ``MAX_PASTE_CHARS``, 6 bytes a code unit at
worst in JSON (``\u0001``; an emoji is 2 units of 4-6 bytes), plus room for the event's names
and router data (about 2.3 MB). A longer message closes the socket (engine.io)."""


class ActionRequest(BaseModel):
    """One proposed tool call that needs a human: tool ``name``, its ``args`` and a ``description``.

    ``args_schema``: the JSON schema of ``args`` when the request brings its own (an MCP server's
    question, ``hitl_app.agent.mcp.elicit``); else None and the tool's schema applies.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    args: dict[str, Any]
    description: str = ""
    args_schema: dict[str, Any] | None = None

    @field_validator("args", "description", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return {} if info.field_name == "args" else ""
        return value


class ReviewConfig(BaseModel):
    """What a reviewer may do with the action request at the same index.

    ``args_schema``: the JSON schema of the action's arguments when the interrupt brings it (the field of
    LangChain's ``ReviewConfig``; its stock ``HumanInTheLoopMiddleware`` leaves it out, a deployment's own
    middleware or graph may fill it): ``parse_hitl_request`` gives it to the action request, so a deployed
    agent's card gets the schema form and the edit is checked against it."""

    model_config = ConfigDict(frozen=True)

    action_name: str
    allowed_decisions: tuple[DecisionType, ...]
    args_schema: dict[str, Any] | None = None


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
    """Do not run the tool; ``message`` (optional) is the reason given to the model.

    ``stop``: "reject and stop": the run ends after this step and the model is told not to retry
    (``STOP_NOTE`` is added to the reason it reads); False: "reject and tell", the run goes on.
    """

    model_config = ConfigDict(extra="forbid")
    type: Literal["reject"]
    message: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    stop: bool = False
    cancel: bool = False
    """On an MCP server's question (a ``<tool>:question`` card): True answers ``cancel`` (dismissed
    without a choice), False ``decline`` (the MCP spec's two refusals); ``CANCEL_NOTE`` carries it."""


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
    payload = decision.model_dump(exclude_none=True)
    for flag in ("stop", "cancel"):
        if payload.get(flag) is False:
            del payload[flag]  # a plain reject is stored as it always was
    return payload


QUESTION_SUFFIX = ":question"
"""The card of an MCP server's question is named ``<tool>:question`` (``hitl_app.agent.mcp.elicit``)."""

CANCEL_NOTE = "The reviewer dismissed the question without answering (cancel)."
"""Added to the message of a reject with ``cancel`` (``elicit.answer_from`` answers ``cancel`` for it)."""


STOP_NOTE = (
    "The reviewer stopped the run: this action was not executed; do not retry it or go on with other "
    "steps unless the user asks."
)
"""Added to the reason of a "reject and stop" (the model reads it; ``tool_messages`` recognises it)."""


def middleware_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """A stored decision payload as LangChain's middleware takes it: a reject with ``stop`` becomes a
    reject whose message ends with ``STOP_NOTE`` (the middleware knows no ``stop`` key), one with
    ``cancel`` (a server's question dismissed) one with ``CANCEL_NOTE``."""
    base = {k: v for k, v in payload.items() if k not in ("stop", "cancel")}
    if base.get("type") != "reject" or not (payload.get("stop") or payload.get("cancel")):
        return base
    reason = (base.get("message") or "").strip()
    for flag, note in (("cancel", CANCEL_NOTE), ("stop", STOP_NOTE)):
        if payload.get(flag) and note not in reason:
            reason = f"{reason.rstrip('.')}. {note}" if reason else note
    return {"type": "reject", "message": reason}


def resume_value(decisions: list[AnyDecision]) -> dict[str, Any]:
    """The resume value for one HITL interrupt: ``{"decisions": [<decision_payload>, ...]}``.

    Build it at the last moment, inside ``Command(resume={interrupt_id: resume_value(...)})``.
    """
    return {"decisions": [middleware_payload(decision_payload(d)) for d in decisions]}


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
    if any(a.args_schema is None and c.args_schema for a, c in zip(actions, configs, strict=True)):
        with_schema = tuple(
            a.model_copy(update={"args_schema": c.args_schema}) if a.args_schema is None and c.args_schema else a
            for a, c in zip(actions, configs, strict=True)
        )
        request = request.model_copy(update={"action_requests": with_schema})
    return request


def describe_interrupt(value: Any, limit: int = 200) -> str:
    """A short, readable rendering of an interrupt value this app cannot show as approval cards."""
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
