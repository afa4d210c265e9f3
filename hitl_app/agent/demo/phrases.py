"""The demo model's phrase parser: the last human message -> a ``Plan`` (text and tool calls).

=====================================================  ===========================================
phrase (verbs case-insensitive, argument case kept)    result
=====================================================  ===========================================
``email <address> [about <subject>][: <body>]``        ``send_email(to, subject, body)``
``write <path>: <content>``                            ``write_file(path, content)``
``delete <path>``                                      ``delete_file(path)``
``sql: <query>``                                       ``execute_sql(query)``
``ask me <question>``                                  ``ask_user(question)``
``read <table>``                                       ``read_data(table)``
``wait <N> seconds``                                   ``slow_task(seconds=N)``
``pay <amount> to <name>``                             ``transfer_funds(amount, to)``
``call <tool> [<JSON object>]``                        ``<tool>(**object)``: any tool, e.g. an MCP one
``stream <N> words``                                   a plain reply of exactly N words (N <= 20000)
``fail after <N> words``                               N words, then ``RuntimeError`` from the stream
requests joined by `` and `` or ``;``                  parallel tool calls in one message, in order
anything else                                          a short help text
=====================================================  ===========================================

A join only splits where the next part starts with a known tool verb, so
``email bob@example.com about salt and pepper`` stays one request and ``sql: SELECT 1; DROP TABLE
records`` stays one query. Everything here is pure.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

MAX_STREAM_WORDS = 20_000
"""Upper bound for ``stream <N> words`` / ``fail after <N> words``."""

HELP_TEXT = (
    "I am the offline demo model. I can: email <address> about <subject>: <body>; "
    "write <path>: <content>; delete <path>; sql: <query>; ask me <question>; read records (or read outbox); "
    "wait <N> seconds; pay <amount> to <name>; call <tool> {JSON arguments}; stream <N> words; "
    "fail after <N> words. Join requests with 'and' or ';'."
)
"""The reply to anything that is not a known phrase."""

_VOCABULARY = (
    "the quick brown fox jumps over a lazy dog while seven calm reviewers read every "
    "card twice before they approve anything at all"
).split()

_VERB_START = r"(?:call\s|email\s|write\s|delete\s|sql\s*:|ask\s+me\s|read\s|wait\s|pay\s+[$€£]?[\d.])"
_SPLIT = re.compile(rf"(?:\s*;\s*|\s+and\s+)(?={_VERB_START})", re.IGNORECASE)

_EMAIL = re.compile(
    r"^email\s+(?P<to>[^\s:]+?)[,.]?(?:\s+about\s+(?P<subject>[^:]*?))?(?:\s*:\s*(?P<body>.*))?$",
    re.IGNORECASE | re.DOTALL,
)
_WRITE = re.compile(r"^write\s+(?P<path>[^:]+?)\s*:\s?(?P<content>.*)$", re.IGNORECASE | re.DOTALL)
_DELETE = re.compile(r"^delete\s+(?P<path>.+?)$", re.IGNORECASE | re.DOTALL)
_SQL = re.compile(r"^sql\s*:\s*(?P<query>.+)$", re.IGNORECASE | re.DOTALL)
_ASK = re.compile(r"^ask\s+me\s+(?P<question>.+)$", re.IGNORECASE | re.DOTALL)
_READ = re.compile(r"^read\s+(?P<table>\w+)\W*$", re.IGNORECASE)
_WAIT = re.compile(r"^wait\s+(?P<n>\d+(?:\.\d+)?)\s+sec(?:ond)?s?\W*$", re.IGNORECASE)
_PAY = re.compile(
    r"^pay\s+[$€£]?(?P<amount>\d[\d,]*(?:\.\d+)?|\.\d+)\s+to\s+(?P<to>.*?)[\s.!]*$", re.IGNORECASE | re.DOTALL
)
_CALL = re.compile(r"^call\s+(?P<tool>[A-Za-z0-9_-]+)(?:\s+(?P<args>\{.*\}))?\s*$", re.IGNORECASE | re.DOTALL)
_STREAM = re.compile(r"^stream\s+(?P<n>\d+)\s+words?\W*$", re.IGNORECASE)
_FAIL = re.compile(r"^fail\s+after\s+(?P<n>\d+)\s+words?\W*$", re.IGNORECASE)


@dataclass(frozen=True)
class Plan:
    """What a demo model will say in one model call.

    Attributes:
        text: the reply text, streamed word by word.
        calls: tool calls ``(tool name, args)`` sent after the text, in order (ids are added when
            the message is built).
        fail_after_words: when set, the stream raises ``RuntimeError`` after that many words.
    """

    text: str
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    fail_after_words: int | None = None


def parse_request(text: str) -> list[tuple[str, dict[str, Any]]] | None:
    """Parse one human message into tool calls ``[(tool_name, args), ...]`` in order.

    Returns None when the message (or any part of a joined message) is not a tool request.
    """
    parts = [p.strip() for p in _SPLIT.split(text.strip()) if p.strip()]
    calls: list[tuple[str, dict[str, Any]]] = []
    for part in parts:
        call = _parse_one(part)
        if call is None:
            return None
        calls.append(call)
    return calls or None


def _parse_one(part: str) -> tuple[str, dict[str, Any]] | None:
    """Parse a single request part; None if it is not a tool phrase."""
    if m := _CALL.match(part):
        return _call(m["tool"], m["args"])
    if m := _EMAIL.match(part):
        subject = (m["subject"] or "").strip() or "(no subject)"
        return "send_email", {"to": m["to"], "subject": subject, "body": (m["body"] or "").strip()}
    if m := _WRITE.match(part):
        return "write_file", {"path": m["path"].strip(), "content": m["content"]}
    if m := _SQL.match(part):
        return "execute_sql", {"query": m["query"].strip()}
    if m := _ASK.match(part):
        return "ask_user", {"question": m["question"].strip()}
    if m := _READ.match(part):
        return "read_data", {"table": m["table"]}
    if m := _WAIT.match(part):
        n = float(m["n"])
        return "slow_task", {"seconds": int(n) if n.is_integer() else n}
    if m := _PAY.match(part):
        return _pay(m["amount"], m["to"])
    if m := _DELETE.match(part):
        return "delete_file", {"path": m["path"].strip()}
    return None


def _call(tool: str, args_text: str | None) -> tuple[str, dict[str, Any]] | None:
    """``call <tool> [<JSON object>]``: the tool by its exact name with the object as arguments;
    None when the text is not one JSON object."""
    if not args_text:
        return tool, {}
    try:
        args = json.loads(args_text)
    except ValueError:
        return None
    return (tool, args) if isinstance(args, dict) else None


def _pay(amount_text: str, to: str) -> tuple[str, dict[str, Any]] | None:
    """``transfer_funds`` args for ``pay <amount> to <name>``: a positive finite amount (commas
    as thousands separators, an int when whole) and a non-empty one-line name; else None."""
    if "," in amount_text and not re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", amount_text):
        return None
    amount = float(amount_text.replace(",", ""))
    name = to.strip()
    if not math.isfinite(amount) or amount <= 0 or not name or "\n" in name:
        return None
    return "transfer_funds", {"amount": int(amount) if amount.is_integer() else amount, "to": name}


def text_reply_plan(text: str) -> Plan | None:
    """The plan for ``stream <N> words`` / ``fail after <N> words``; None for any other text."""
    text = text.strip()
    if m := _STREAM.match(text):
        return Plan(text=demo_words(int(m["n"])))
    if m := _FAIL.match(text):
        n = min(int(m["n"]), MAX_STREAM_WORDS)
        return Plan(text=demo_words(n), fail_after_words=n)
    return None


def demo_words(n: int) -> str:
    """Deterministic text of exactly ``n`` words (space separated, ending with a period).

    ``n`` is clamped to ``0..MAX_STREAM_WORDS``; 0 gives ``""``.
    """
    n = max(0, min(n, MAX_STREAM_WORDS))
    if n == 0:
        return ""
    words = [_VOCABULARY[i % len(_VOCABULARY)] for i in range(n)]
    words[0] = words[0].capitalize()
    return " ".join(words) + "."
