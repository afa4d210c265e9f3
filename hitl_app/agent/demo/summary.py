"""The demo model's sentences: the intro before tool calls and one summary sentence per tool result.

Every value the user typed is shown literally under markdown: plain values are escaped
(``md_escape``) and SQL goes into an inline code span whose fence no text can close
(``code_span``). Tool messages are read with ``hitl_app.review.tool_messages``, the app's one
reader of HumanInTheLoopMiddleware's reject/respond/edit conventions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hitl_app.review.tool_messages import Edited, Plain, Rejected, Responded, Stopped, read_tool_message

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+!|~])")
_BACKTICK_RUN = re.compile(r"`+")


def md_escape(value: Any) -> str:
    """``str(value)`` with markdown's special characters backslash-escaped.

    The app renders assistant text as markdown; values the user typed (an email subject with
    ``[x](javascript:...)`` or ``<img ...>``) must read back literally, not as a link or dropped HTML.
    """
    return _MD_SPECIAL.sub(r"\\\1", str(value))


def code_span(value: Any) -> str:
    """``str(value)`` as one markdown inline code span that its content cannot close.

    The fence is one backtick longer than the longest run of backticks in the text, and the text
    is padded with a space on each side when it contains a backtick (CommonMark strips one space
    from each side again). Line breaks become spaces, since a blank line would end the paragraph
    and with it the span.
    """
    text = " ".join(str(value).splitlines())
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def intro_sentence(calls: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """The one short sentence streamed before tool calls, e.g. "I'll delete notes/x.txt."."""
    phrases = [_intent(name, args) for name, args in calls]
    if len(phrases) == 1:
        joined = phrases[0]
    else:
        joined = ", ".join(phrases[:-1]) + " and " + phrases[-1]
    return f"I'll {joined}."


def _intent(name: str, args: dict[str, Any]) -> str:
    """Verb phrase for a planned call, e.g. 'send an email to a@b.c'."""
    raw, args = args, _escaped(args)
    match name:
        case "send_email":
            return f"send an email to {args.get('to')}"
        case "write_file":
            return f"write {args.get('path')}"
        case "delete_file":
            return f"delete {args.get('path')}"
        case "execute_sql":
            return f"run the SQL statement {code_span(raw.get('query'))}"
        case "ask_user":
            return "ask you a question"
        case "read_data":
            return f"read the {args.get('table')} table"
        case "slow_task":
            return f"wait {args.get('seconds')} seconds"
        case "transfer_funds":
            return f"pay {args.get('amount')} to {args.get('to')}"
    return f"call {name}"


def _done(name: str, args: dict[str, Any], result: str) -> str:
    """Past-tense sentence body (no final period) for a call that ran with ``args``."""
    raw, args = args, _escaped(args)
    match name:
        case "send_email":
            return f"sent the email to {args.get('to')} (subject: {args.get('subject')})"
        case "write_file":
            return f"wrote {args.get('path')}"
        case "delete_file":
            return f"deleted {args.get('path')}"
        case "execute_sql":
            return f"ran {code_span(raw.get('query'))}: {_short(result)}"
        case "ask_user":
            return f"asked '{args.get('question')}': {_short(result)}"
        case "read_data":
            return f"read the {args.get('table')} table: {_short(result)}"
        case "slow_task":
            return f"waited {args.get('seconds')} seconds"
        case "transfer_funds":
            return f"paid {args.get('amount')} to {args.get('to')}"
    return f"ran {name}: {_short(result)}"


def _thing(name: str, args: dict[str, Any]) -> str:
    """Noun phrase for a call that did not happen, e.g. 'the delete of notes/old.txt'."""
    raw, args = args, _escaped(args)
    match name:
        case "send_email":
            return f"the email to {args.get('to')}"
        case "write_file":
            return f"the write to {args.get('path')}"
        case "delete_file":
            return f"the delete of {args.get('path')}"
        case "execute_sql":
            return f"the SQL statement {code_span(raw.get('query'))}"
        case "ask_user":
            return "the question"
        case "read_data":
            return f"the read of {args.get('table')}"
        case "slow_task":
            return f"the {args.get('seconds')}-second wait"
        case "transfer_funds":
            return f"the payment of {args.get('amount')} to {args.get('to')}"
    return f"the {name} call"


def _short(text: str, limit: int = 200) -> str:
    """One-line excerpt of ``text``, at most ``limit`` characters, markdown-escaped, no final period."""
    flat = " ".join(str(text).split())
    flat = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    return md_escape(flat.rstrip("."))


def _escaped(args: dict[str, Any]) -> dict[str, Any]:
    return {k: md_escape(v) for k, v in args.items()}


def _cap(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


def summarize_tool_result(tool_call: Mapping[str, Any], message: Any | None) -> str:
    """One sentence telling the user what happened to ``tool_call`` given its tool message.

    ``tool_call`` is the model's call (``{"name", "args", "id"}``); ``message`` its ToolMessage or
    None. Handles: done, edited by a reviewer (says so and names the call that ran), rejected (with
    or without reason), answered (respond), stopped by the repeated-rejection guard, tool errors.
    """
    name = tool_call.get("name", "?")
    args = tool_call.get("args") or {}
    if message is None:
        return f"{_cap(_thing(name, args))} got no result."
    match read_tool_message(message):
        case Responded(answer=answer):
            return f"You answered: {_short(answer, 2000)}."
        case Rejected(reason=reason) as rejected if rejected.by_policy:
            # "rejected by the policy: the deadline of card 3 passed (1 min without a decision)"
            first = str(reason).split(". ", 1)[0].rstrip(".")
            return f"{_cap(_thing(name, args))} did not happen: {_short(first[:1].lower() + first[1:], 2000)}."
        case Rejected(reason=reason):
            why = f" (reason: {_short(reason, 2000)})" if reason else ""
            return f"{_cap(_thing(name, args))} did not happen: the reviewer rejected it{why}."
        case Stopped(text=text):
            return f"{_cap(_thing(name, args))} did not happen: {text}"
        case Edited(name=new_name, args=new_args, result=result, failed=True):
            shown = code_span(json.dumps(new_args if new_args is not None else {}))
            return f"A reviewer edited the call before it ran ({new_name} with {shown}), but it failed: {_short(result)}"
        case Edited(name=new_name, args=new_args, result=result):
            return f"A reviewer edited the call before it ran: {_done(new_name, new_args or {}, result)} instead."
        case Plain(text=text, failed=True):
            return f"{name} failed: {_short(text)}."
        case Plain(text=text):
            return _cap(_done(name, args, text)) + "."
    raise AssertionError("unreachable: read_tool_message returned an unknown kind")
