"""Validate a reviewer's submission against the pending interrupt before resuming.

Why this exists: in batched mode a malformed resume value is saved as the task's RESUME write and
replayed on every later resume, which leaves the thread unusable (a bad batched resume poisons
the thread: every later resume of that interrupt fails the same way). So nothing reaches
``Command(resume=...)`` unless it passed every check here: interrupt id, count, order, allowed
types, unchanged tool name, schema-valid arguments, respond message present.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter, ValidationError

from hitl_app.review.json_args import ArgsError, ArgsValidator, json_schema_args_validator
from hitl_app.review.types import (
    DECISION_TYPES,
    MAX_EDIT_JSON_CHARS,
    QUESTION_SUFFIX,
    ActionRequest,
    AnyDecision,
    ApproveDecision,
    Decision,
    EditDecision,
    PendingReview,
    RejectDecision,
    RespondDecision,
    ReviewConfig,
)

_DECISION_ADAPTER: TypeAdapter[AnyDecision] = TypeAdapter(Decision)

ReviewErrorCode = Literal[
    "stale", "count", "not_allowed", "renamed", "bad_args", "bad_json", "too_large", "missing_message", "malformed",
    "forbidden", "bad_request", "not_grantable", "already_decided",
]
"""The stable machine words of ``ReviewError.code``."""


def already_decided_text(who: str) -> str:
    """The refusal of a submission on a review decided meanwhile; ``who`` decided it (``""``
    unknown, ``"You"`` the person submitting), e.g. "Rex already decided this review; your
    choices were not sent."."""
    if who == "You":
        return "You already decided this review; nothing more was sent."
    return f"{who or 'Someone'} already decided this review; your choices were not sent."


class ReviewError(ValueError):
    """A submission was refused. Nothing was resumed; the review stays answerable.

    Attributes:
        message: plain words for the reviewer, saying what to do instead.
        card_index: the action request the error belongs to, or ``None`` for the whole review.
        code: a stable machine word: ``stale``, ``count``, ``not_allowed``, ``renamed``,
            ``bad_args``, ``bad_json``, ``too_large``, ``missing_message``, ``malformed``, or
            ``forbidden`` (the review rights refuse this person the decision or the grant),
            ``bad_request`` (a malformed grant entry) or ``not_grantable`` (the policy allows no
            grant for this card), ``already_decided`` (another submission decided the review
            first: it waits out its undo window; the message names who).
    """

    def __init__(self, message: str, *, card_index: int | None = None, code: ReviewErrorCode = "malformed"):
        super().__init__(message)
        self.message = message
        self.card_index = card_index
        self.code = code


def _describe(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def pydantic_args_validator(schema: type[BaseModel]) -> ArgsValidator:
    """An ``ArgsValidator`` for a tool's pydantic args schema (``BaseTool.tool_call_schema``).

    Unknown fields are refused (pydantic models ignore them by default, the tool would silently
    drop them), as are wrong types (no coercion of numbers into strings) and missing fields.
    """
    known = set(schema.model_fields)

    def check(args: dict[str, Any]) -> None:
        unknown = sorted(set(args) - known)
        if unknown:
            raise ArgsError(
                f"unknown field `{unknown[0]}` (this tool takes: {', '.join(sorted(known)) or 'no arguments'})"
            )
        try:
            schema.model_validate(args, strict=False)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "arguments"
            if err["type"] == "missing":
                raise ArgsError(f"field `{field}` is required") from None
            kind = {
                "string_type": "a string",
                "int_type": "a whole number",
                "int_parsing": "a whole number",
                "float_type": "a number",
                "float_parsing": "a number",
                "bool_type": "true or false",
                "bool_parsing": "true or false",
                "list_type": "a list",
                "dict_type": "an object",
            }.get(err["type"])
            if kind:
                raise ArgsError(f"field `{field}` must be {kind} (got {_describe(err.get('input'))})") from None
            if err["type"] == "string_pattern_mismatch":
                info = schema.model_fields.get(str(err["loc"][0])) if err["loc"] else None
                expected = f" (expected {info.description})" if info is not None and info.description else ""
                raise ArgsError(f"field `{field}` has the wrong format{expected}, got {_describe(err.get('input'))}") from None
            raise ArgsError(f"field `{field}`: {err['msg']}") from None

    check.json_schema = schema.model_json_schema()  # type: ignore[attr-defined]
    return check


def args_json_schema(validator: ArgsValidator | None) -> dict[str, Any] | None:
    """The JSON schema of the arguments ``validator`` checks (``pydantic_args_validator`` keeps it
    as ``json_schema``), or None for a validator without one. The approval card builds its form
    and the JSON editor's checks from it; the server still checks with the validator itself."""
    schema = getattr(validator, "json_schema", None)
    return schema if isinstance(schema, dict) else None


class _NonFiniteNumber(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity`` in edited JSON (Python's json accepts them)."""


def _refuse_constant(name: str) -> Any:
    raise _NonFiniteNumber(name)


def parse_args_json(text: str) -> dict[str, Any]:
    """Parse the edit editor's text into an arguments object.

    Raises:
        ReviewError: ``too_large`` over ``MAX_EDIT_JSON_CHARS`` characters, ``bad_json`` for
            invalid JSON (with line and column), ``NaN``/``Infinity`` (not JSON, and not storable
            as JSON later), nesting too deep to parse, or JSON that is not an object.
    """
    if len(text) > MAX_EDIT_JSON_CHARS:
        raise ReviewError(
            f"The edited arguments are too large ({len(text):,} characters; the limit is "
            f"{MAX_EDIT_JSON_CHARS:,}).",
            code="too_large",
        )
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise ReviewError(
            f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).", code="bad_json"
        ) from None
    except _NonFiniteNumber as exc:
        raise ReviewError(f"Not valid JSON: {exc} is not a number JSON allows; write a finite number.", code="bad_json") from None
    except RecursionError:
        raise ReviewError("Not valid JSON: the arguments are nested too deeply.", code="bad_json") from None
    if not isinstance(value, dict):
        raise ReviewError("The arguments must be a JSON object, like {\"to\": \"...\"}.", code="bad_json")
    return value


def validate_edit_args(
    review: PendingReview, index: int, args: dict[str, Any], validators: Mapping[str, ArgsValidator]
) -> None:
    """Check one card's edited ``args`` against its tool's schema (if the tool is known).

    Raises ReviewError(code="bad_args") naming the card's tool and the field.
    """
    action = review.action_requests[index]
    name = action.name
    validator = validators.get(name)
    if action.args_schema is not None:  # a request that brings its own schema (an MCP server's question)
        validator = json_schema_args_validator(action.args_schema)
    if validator is None:
        return
    try:
        validator(args)
    except ArgsError as exc:
        raise ReviewError(f"Edit refused for {name}: {exc}.", card_index=index, code="bad_args") from None


def validate_submission(
    review: PendingReview | None,
    interrupt_id: Any,
    raw_decisions: Any,
    validators: Mapping[str, ArgsValidator],
) -> list[AnyDecision]:
    """Check a submission and return the typed decisions to resume with.

    Args:
        review: the pending review as read from the checkpoint (``None`` if nothing is pending).
        interrupt_id: the interrupt id the submission claims to answer.
        raw_decisions: untrusted data from the browser: a list of decision dicts.
        validators: tool name -> args validator, for edits.

    Returns:
        One ``ApproveDecision | EditDecision | RejectDecision | RespondDecision`` per action
        request, in the review's order (``resume_value`` turns them into the resume dict).

    Raises:
        ReviewError: the first problem found, with the card index where it applies.
    """
    if review is None:
        raise ReviewError("This review is no longer pending: it was already decided.", code="stale")
    if not isinstance(interrupt_id, str) or interrupt_id != review.interrupt_id:
        raise ReviewError(
            "This review was already decided (or replaced); the cards now show the thread's real state.",
            code="stale",
        )
    if not isinstance(raw_decisions, list):
        raise ReviewError("Decisions must be a list, one per card.", code="malformed")
    expected = len(review.action_requests)
    if len(raw_decisions) != expected or len(review.review_configs) != expected:
        raise ReviewError(
            f"Decide every card before submitting: {len(raw_decisions)} of {expected} decided.",
            code="count",
        )
    decisions: list[AnyDecision] = []
    for index, (raw, action, config) in enumerate(
        zip(raw_decisions, review.action_requests, review.review_configs, strict=True)
    ):
        decision = _check_decision(index, raw, action, config)
        if isinstance(decision, EditDecision):
            validate_edit_args(review, index, decision.edited_action.args, validators)
        decisions.append(decision)
    return decisions


def validate_partial(
    review: PendingReview | None,
    interrupt_id: Any,
    raw_decisions: Any,
    validators: Mapping[str, ArgsValidator],
) -> list[AnyDecision | None]:
    """Like ``validate_submission``, for one person's decisions on some of the cards.

    ``raw_decisions`` has one entry per card, in order: a typed decision (the app's own callers) or
    a payload dict (a client's JSON), each checked against the card's review config; ``None``
    leaves a card to others (or for later). At least one card must carry a decision.

    Raises:
        ReviewError: ``stale`` / ``malformed`` / ``count`` as ``validate_submission``, ``count``
            when every entry is ``None``, and the per-card problems with their card index.
    """
    if review is None or not isinstance(interrupt_id, str) or interrupt_id != review.interrupt_id:
        validate_submission(review, interrupt_id, raw_decisions, validators)  # raises "stale"
    assert review is not None
    if not isinstance(raw_decisions, list | tuple):
        raise ReviewError("Decisions must be a list, one entry per card.", code="malformed")
    if len(raw_decisions) != len(review.action_requests) or len(review.review_configs) != len(raw_decisions):
        raise ReviewError(
            f"Decide every card before submitting: {len(raw_decisions)} of {len(review.action_requests)} decided.",
            code="count",
        )
    if all(raw is None for raw in raw_decisions):
        raise ReviewError("Choose a decision on at least one card first.", code="count")
    out: list[AnyDecision | None] = []
    for index, (raw, action, config) in enumerate(
        zip(raw_decisions, review.action_requests, review.review_configs, strict=True)
    ):
        if raw is None:
            out.append(None)
            continue
        decision = _check_decision(index, raw, action, config)
        if isinstance(decision, EditDecision):
            validate_edit_args(review, index, decision.edited_action.args, validators)
        out.append(decision)
    return out


def _check_decision(index: int, raw: Any, action: ActionRequest, config: ReviewConfig) -> AnyDecision:
    """One card's decision (typed, or a payload dict from a client) as a typed decision allowed by its
    review config: the type, an edit's tool and size and an answer's text are checked either way.

    An edit whose arguments equal the proposed ones is returned as an approval when the card allows
    one (QA: "an edit with no changes was recorded as an edit").

    Raises ReviewError (``malformed``, ``not_allowed``, ``missing_message``, ``renamed``,
    ``too_large``) with ``card_index=index``.
    """
    typed = raw if isinstance(raw, ApproveDecision | EditDecision | RejectDecision | RespondDecision) else None
    kind = typed.type if typed is not None else raw.get("type") if isinstance(raw, dict) else None
    if kind not in DECISION_TYPES:
        raise ReviewError(
            f"Card {index + 1} ({action.name}) has no valid decision (got {_describe(kind)}).",
            card_index=index,
            code="malformed",
        )
    if kind not in config.allowed_decisions:
        raise ReviewError(
            f"{kind.capitalize()} is not allowed for {action.name}; allowed: {', '.join(config.allowed_decisions)}.",
            card_index=index,
            code="not_allowed",
        )
    try:
        decision = typed if typed is not None else _DECISION_ADAPTER.validate_python(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        if kind == "respond" and "message" in err["loc"]:
            raise ReviewError(
                f"Write an answer for {action.name} before submitting.", card_index=index, code="missing_message"
            ) from None
        where = ".".join(str(p) for p in err["loc"][1:]) or "decision"
        raise ReviewError(
            f"Card {index + 1} ({action.name}): `{where}` {err['msg'].lower()}.", card_index=index, code="malformed"
        ) from None
    if isinstance(decision, RespondDecision) and not decision.message.strip():
        raise ReviewError(f"Write an answer for {action.name} before submitting.", card_index=index, code="missing_message")
    if isinstance(decision, RejectDecision) and decision.cancel and not action.name.endswith(QUESTION_SUFFIX):
        raise ReviewError(f"Cancel answers an MCP server's question; {action.name} is a tool call: reject it instead.",
                          card_index=index, code="not_allowed")
    if isinstance(decision, EditDecision):
        if decision.edited_action.name != action.name:
            raise ReviewError(
                f"An edit cannot change the tool: this card is {action.name}, not {decision.edited_action.name}.",
                card_index=index,
                code="renamed",
            )
        if len(json.dumps(decision.edited_action.args)) > MAX_EDIT_JSON_CHARS:
            raise ReviewError(
                f"The edited arguments for {action.name} are too large (limit {MAX_EDIT_JSON_CHARS:,} characters).",
                card_index=index,
                code="too_large",
            )
        if decision.edited_action.args == action.args and "approve" in config.allowed_decisions:
            # an edit that changed nothing is an approval: the audit, the metrics and the model say so
            return ApproveDecision(type="approve")
    return decision
