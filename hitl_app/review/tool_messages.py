r"""Read the tool messages LangChain's ``HumanInTheLoopMiddleware`` writes for a reviewer's decision.

The one place that knows those conventions (checked against langchain 1.5.2,
``langchain/agents/middleware/human_in_the_loop.py``). In batched mode the middleware answers a
tool call itself when the reviewer decides:

* ``reject``: a ``ToolMessage(status="error")`` with ``additional_kwargs["lc_source"] ==
  "hitl_interrupt_decision"`` and ``additional_kwargs["lc_data"] == {"decision": "reject"}``. Its
  content is ``"User rejected the tool call for `<name>` with reason: <reason>"``, or, without a
  reason, a sentence saying the tool was not executed and must not be retried.
* ``respond``: the same metadata with ``"decision": "respond"``, ``status="success"``; the content
  is the reviewer's answer, verbatim.
* ``edit``: the tool runs with the reviewer's arguments and its own result is prefixed with an edit
  notice: ``"<EDIT_NOTICE> Executed instead: <name> with arguments <json>."``, followed by
  ``"\n\nTool response:\n<result>"`` when the tool returned text. No metadata marks it.

The app adds one convention of its own: a call the repeated-rejection guard refused carries
``additional_kwargs["lc_source"] == GUARD_SOURCE``.

Everything here is pure (no LangChain import): ``parse_tool_message`` takes the text, the
``additional_kwargs`` and the status; ``read_tool_message`` takes any object with ``text`` (or
``content``), ``additional_kwargs`` and ``status``, such as a ``ToolMessage``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hitl_app.review.desk_policy import POLICY_REJECTED
from hitl_app.review.types import STOP_NOTE

HITL_SOURCE = "hitl_interrupt_decision"
"""``additional_kwargs["lc_source"]`` of the reject/respond messages HumanInTheLoopMiddleware writes."""

GUARD_SOURCE = "hitl_repeat_guard"
"""``additional_kwargs["lc_source"]`` of the messages the app's repeated-rejection guard writes."""

EDIT_NOTICE = (
    "Note: a human reviewer replaced this tool call before it ran. The call recorded in "
    "your message is the one you produced, not the one that executed. This was "
    "intentional and authorized. Do not re-issue your original call."
)
"""The middleware's default edit notice: the text that opens an edited call's tool message."""

_EXECUTED_INSTEAD = re.compile(r" Executed instead: (?P<name>[\w.-]+) with arguments ")
_TOOL_RESPONSE = re.compile(r"\.\n\nTool response:\n?")
_REJECT_WITH_REASON = re.compile(
    r"\AUser rejected the tool call for `(?P<name>[^`]*)` with reason: (?P<reason>.*)\Z", re.DOTALL
)


@dataclass(frozen=True)
class Rejected:
    """The reviewer rejected the call; it did not run.

    ``reason`` is the reviewer's text, or None when they gave none. ``text`` is the whole message.
    ``stopped``: "reject and stop" (``STOP_NOTE`` in the message): the run ends, no retry.
    ``by_policy``: no person rejected it, a deadline did (the reason begins with
    ``desk_policy.POLICY_REJECTED``: "Rejected by the policy: the deadline of card 3 passed ...").
    """

    text: str
    reason: str | None
    stopped: bool = False

    @property
    def by_policy(self) -> bool:
        """True when the policy (a deadline), not a reviewer, rejected the call."""
        return bool(self.reason) and str(self.reason).startswith(POLICY_REJECTED)


@dataclass(frozen=True)
class Responded:
    """The reviewer answered in place of the tool (``respond``); ``answer`` is their text."""

    answer: str


@dataclass(frozen=True)
class Edited:
    """The reviewer changed the call before it ran.

    Attributes:
        name: the tool that ran (the reviewer's call).
        args: the arguments it ran with, or None if the notice's JSON could not be read.
        result: the tool's own output after the notice ("" when it returned nothing).
        failed: True when the edited call raised (the message's status is ``error``).
        text: the whole message, notice included.
    """

    name: str
    args: dict[str, Any] | None
    result: str
    failed: bool
    text: str


@dataclass(frozen=True)
class Stopped:
    """The app's repeated-rejection guard refused the call; ``text`` says why."""

    text: str


@dataclass(frozen=True)
class Plain:
    """An ordinary tool result; ``failed`` is True when the tool raised (status ``error``)."""

    text: str
    failed: bool


ToolMessageReading = Rejected | Responded | Edited | Stopped | Plain
"""What a tool message says about its call: one of the five kinds above."""


def parse_tool_message(
    text: str, additional_kwargs: Mapping[str, Any] | None = None, status: str = "success"
) -> ToolMessageReading:
    """Classify one tool message.

    Args:
        text: the message's text (for list content, the joined text blocks).
        additional_kwargs: the message's ``additional_kwargs`` (``lc_source``/``lc_data``), if any.
        status: ``"success"`` or ``"error"``.

    Returns:
        ``Rejected``, ``Responded``, ``Stopped``, ``Edited`` or ``Plain`` (checked in that order).
        Never raises: anything unrecognised is ``Plain``.
    """
    extra = additional_kwargs or {}
    source = extra.get("lc_source")
    data = extra.get("lc_data")
    decision = data.get("decision") if isinstance(data, Mapping) else None
    if source == HITL_SOURCE and decision == "reject":
        match = _REJECT_WITH_REASON.match(text)
        reason = match["reason"] if match else None
        stopped = STOP_NOTE in text
        if reason is not None and stopped:
            reason = reason.replace(STOP_NOTE, "").strip().rstrip(".") or None
        return Rejected(text=text, reason=reason, stopped=stopped)
    if source == HITL_SOURCE and decision == "respond":
        return Responded(answer=text)
    if source == GUARD_SOURCE:
        return Stopped(text=text)
    failed = status == "error"
    if (edited := _parse_edit(text, failed)) is not None:
        return edited
    return Plain(text=text, failed=failed)


def read_tool_message(message: Any) -> ToolMessageReading:
    """``parse_tool_message`` for a message object (a LangChain ``ToolMessage`` or look-alike).

    Reads ``message.text`` (falling back to ``str(message.content)``), ``message.additional_kwargs``
    and ``message.status`` (default ``"success"``).
    """
    text = getattr(message, "text", None)
    if not isinstance(text, str):
        text = str(getattr(message, "content", ""))
    return parse_tool_message(
        text, getattr(message, "additional_kwargs", None), getattr(message, "status", "success") or "success"
    )


def _parse_edit(text: str, failed: bool) -> Edited | None:
    """The edit notice at the start of ``text``, or None when ``text`` does not open with it."""
    if not text.startswith(EDIT_NOTICE):
        return None
    head = _EXECUTED_INSTEAD.match(text, len(EDIT_NOTICE))
    if head is None:
        return None
    try:
        args, end = json.JSONDecoder().raw_decode(text, head.end())
    except json.JSONDecodeError:
        args, end = None, head.end()
    if not isinstance(args, dict):
        args = None
    response = _TOOL_RESPONSE.search(text, end)
    result = text[response.end() :] if response is not None else ""
    return Edited(name=head["name"], args=args, result=result, failed=failed, text=text)
