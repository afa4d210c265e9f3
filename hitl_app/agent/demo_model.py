"""The offline demo chat model: deterministic, streamed, tool-calling.

``DemoChatModel`` is the app's default model (``HITL_MODEL=demo``). It needs no network and no
keys, and it behaves the same way every time, which makes the whole app demonstrable and testable.

What it understands (in the LAST human message, case-insensitive verbs, argument case kept):

=====================================================  ===========================================
phrase                                                 result
=====================================================  ===========================================
``email <address> [about <subject>][: <body>]``        ``send_email(to, subject, body)``
``write <path>: <content>``                            ``write_file(path, content)``
``delete <path>``                                      ``delete_file(path)``
``sql: <query>``                                       ``execute_sql(query)``
``ask me <question>``                                  ``ask_user(question)``
``read <table>``                                       ``read_data(table)``
``wait <N> seconds``                                   ``slow_task(seconds=N)``
``stream <N> words``                                   a plain reply of exactly N words (N <= 20000)
``fail after <N> words``                               N words, then ``RuntimeError`` from the stream
requests joined by `` and `` or ``;``                  parallel tool calls in one message, in order
anything else                                          a short help text
=====================================================  ===========================================

A join only splits where the next part starts with a known tool verb, so
``email bob@example.com about salt and pepper`` stays one request and ``sql: SELECT 1; DROP TABLE
records`` stays one query.

After tool results (ToolMessages trailing the last AIMessage) it streams a summary, one sentence
per tool call, and ends the turn; it never proposes a call again after results. The summary reads
the ToolMessage shapes that ``langchain.agents.middleware.human_in_the_loop`` (langchain 1.5.2)
produces: reject/respond messages carry ``additional_kwargs["lc_source"] ==
"hitl_interrupt_decision"`` and ``additional_kwargs["lc_data"]["decision"]``; an edited call's
content contains ``"Executed instead: <name> with arguments {json}."`` (FINDINGS.md §3).

Streaming: tokens are words with their following whitespace; tool calls are sent as
``tool_call_chunks`` in the last chunk, because the stock fake models drop ``tool_calls`` when
streamed (FINDINGS.md §0). Tool call ids are ``call_<uuid4 hex>``, unique across threads and
processes.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

MAX_STREAM_WORDS = 20_000
"""Upper bound for ``stream <N> words`` / ``fail after <N> words``."""

HITL_SOURCE = "hitl_interrupt_decision"
"""``additional_kwargs["lc_source"]`` of ToolMessages written by HumanInTheLoopMiddleware."""

GUARD_SOURCE = "hitl_repeat_guard"
"""``additional_kwargs["lc_source"]`` of ToolMessages written by ``RepeatedRejectionGuard``."""

_VOCABULARY = (
    "the quick brown fox jumps over a lazy dog while seven calm reviewers read every "
    "card twice before they approve anything at all"
).split()

_VERB_START = r"(?:email\s|write\s|delete\s|sql\s*:|ask\s+me\s|read\s|wait\s)"
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
_STREAM = re.compile(r"^stream\s+(?P<n>\d+)\s+words?\W*$", re.IGNORECASE)
_FAIL = re.compile(r"^fail\s+after\s+(?P<n>\d+)\s+words?\W*$", re.IGNORECASE)
_EXECUTED_INSTEAD = re.compile(r"Executed instead: (?P<name>[\w.-]+) with arguments ")
_REJECT_REASON = re.compile(r"with reason: (?P<reason>.*)$", re.DOTALL)

HELP_TEXT = (
    "I am the offline demo model. I can: email <address> about <subject>: <body>; "
    "write <path>: <content>; delete <path>; sql: <query>; ask me <question>; read records (or read outbox); "
    "wait <N> seconds; stream <N> words; fail after <N> words. Join requests with 'and' or ';'."
)


@dataclass(frozen=True)
class _Plan:
    """What the model will say: text, tool calls (name, args) and an optional failure point."""

    text: str
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    fail_after_words: int | None = None


def parse_request(text: str) -> list[tuple[str, dict[str, Any]]] | None:
    """Parse one human message into tool calls ``[(tool_name, args), ...]`` in order.

    Returns None when the message (or any part of a joined message) is not a tool request.
    Pure function; see the module docstring for the phrases.
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
    if m := _DELETE.match(part):
        return "delete_file", {"path": m["path"].strip()}
    return None


def demo_words(n: int) -> str:
    """Deterministic text of exactly ``n`` words (space separated, ending with a period)."""
    n = max(0, min(n, MAX_STREAM_WORDS))
    if n == 0:
        return ""
    words = [_VOCABULARY[i % len(_VOCABULARY)] for i in range(n)]
    words[0] = words[0].capitalize()
    return " ".join(words) + "."


def _intro_sentence(calls: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """The one short sentence streamed before tool calls."""
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
            return f"run the SQL statement {_code(raw.get('query'))}"
        case "ask_user":
            return "ask you a question"
        case "read_data":
            return f"read the {args.get('table')} table"
        case "slow_task":
            return f"wait {args.get('seconds')} seconds"
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
            return f"ran {_code(raw.get('query'))}: {_short(result)}"
        case "ask_user":
            return f"asked '{args.get('question')}': {_short(result)}"
        case "read_data":
            return f"read the {args.get('table')} table: {_short(result)}"
        case "slow_task":
            return f"waited {args.get('seconds')} seconds"
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
            return f"the SQL statement {_code(raw.get('query'))}"
        case "ask_user":
            return "the question"
        case "read_data":
            return f"the read of {args.get('table')}"
        case "slow_task":
            return f"the {args.get('seconds')}-second wait"
    return f"the {name} call"


def _short(text: str, limit: int = 200) -> str:
    """One-line excerpt of ``text``, at most ``limit`` characters, markdown-escaped, no final period."""
    flat = " ".join(str(text).split())
    flat = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    return _md(flat.rstrip("."))


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+!|~])")


def _md(value: Any) -> str:
    """``value`` as text with markdown's special characters escaped.

    The app renders assistant text as markdown; values the user typed (an email subject with
    ``[x](javascript:...)`` or ``<img ...>``) must read back literally, not as a link or dropped HTML.
    """
    return _MD_SPECIAL.sub(r"\\\1", str(value))


def _code(value: Any) -> str:
    """``value`` as an inline code span (safe for values containing backticks)."""
    text = str(value)
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _escaped(args: dict[str, Any]) -> dict[str, Any]:
    return {k: _md(v) for k, v in args.items()}


def _cap(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


def summarize_tool_result(tool_call: dict[str, Any], message: ToolMessage | None) -> str:
    """One sentence telling the user what happened to ``tool_call`` given its ToolMessage.

    Handles: done, edited (HITL edit notice), rejected (with or without reason), answered
    (respond), stopped by ``RepeatedRejectionGuard``, and tool errors (status ``error``).
    """
    name = tool_call.get("name", "?")
    args = tool_call.get("args") or {}
    if message is None:
        return f"{_cap(_thing(name, args))} got no result."
    content = message.text if hasattr(message, "text") else str(message.content)
    extra = message.additional_kwargs or {}
    source = extra.get("lc_source")
    decision = (extra.get("lc_data") or {}).get("decision")
    if source == HITL_SOURCE and decision == "respond":
        return f"You answered: {_short(content, 2000)}."
    if source == HITL_SOURCE and decision == "reject":
        m = _REJECT_REASON.search(content)
        reason = f" (reason: {_short(m['reason'], 2000)})" if m else ""
        return f"{_cap(_thing(name, args))} did not happen: the reviewer rejected it{reason}."
    if source == GUARD_SOURCE:
        return f"{_cap(_thing(name, args))} did not happen: {content}"
    if (m := _EXECUTED_INSTEAD.search(content)) is not None:
        new_name = m["name"]
        try:
            new_args, end = json.JSONDecoder().raw_decode(content, m.end())
        except json.JSONDecodeError:
            new_args, end = {}, m.end()
        rest = content[end:]
        result = rest.split("Tool response:", 1)[1].strip() if "Tool response:" in rest else ""
        if message.status == "error":
            return (
                f"A reviewer edited the call before it ran ({new_name} with "
                f"{_code(json.dumps(new_args))}), but it failed: {_short(result)}"
            )
        return f"A reviewer edited the call before it ran: {_done(new_name, new_args, result)} instead."
    if message.status == "error":
        return f"{name} failed: {_short(content)}."
    return _cap(_done(name, args, content)) + "."


class DemoChatModel(BaseChatModel):
    """Deterministic offline chat model (see the module docstring for the phrases).

    Fields:
        words_per_second: streaming pace in words per second; 0 disables pacing.
        bound_tool_names: names set by ``bind_tools``; calls to other tools are never emitted.
            None (not bound) means no tool calls at all.

    Raises:
        RuntimeError: from ``_stream``/``_astream`` (after N words) or ``_generate`` for
            ``fail after <N> words``.
    """

    words_per_second: float = 30.0
    bound_tool_names: list[str] | None = None

    @property
    def _llm_type(self) -> str:
        return "hitl-demo"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"words_per_second": self.words_per_second}

    def bind_tools(  # type: ignore[override]
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable:
        """Return a copy that remembers the tool names (BaseTool, dict schema or function)."""
        names: list[str] = []
        for t in tools:
            if isinstance(t, BaseTool):
                names.append(t.name)
            elif isinstance(t, dict):
                names.append(t.get("name") or t.get("function", {}).get("name"))
            else:
                names.append(getattr(t, "__name__", str(t)))
        return self.model_copy(update={"bound_tool_names": names})

    # ---- the "brain" ----------------------------------------------------------------------
    def _plan(self, messages: Sequence[BaseMessage]) -> _Plan:
        """Decide the reply for ``messages`` (pure except for fresh tool call ids)."""
        results = _trailing_tool_results(messages)
        if results is not None:
            ai, tool_messages = results
            by_id = {m.tool_call_id: m for m in tool_messages}
            sentences = [summarize_tool_result(tc, by_id.get(tc["id"])) for tc in ai.tool_calls]
            return _Plan(text=" ".join(sentences) or "Done.")
        human = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        text = (human.text if human is not None else "").strip()
        if m := _STREAM.match(text):
            return _Plan(text=demo_words(int(m["n"])))
        if m := _FAIL.match(text):
            n = min(int(m["n"]), MAX_STREAM_WORDS)
            return _Plan(text=demo_words(n), fail_after_words=n)
        calls = parse_request(text) or []
        bound = set(self.bound_tool_names or [])
        calls = [c for c in calls if c[0] in bound]
        if not calls:
            return _Plan(text=HELP_TEXT)
        return _Plan(text=_intro_sentence(calls), calls=tuple(calls))

    @staticmethod
    def _tool_calls(plan: _Plan) -> list[dict[str, Any]]:
        return [
            {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex}", "type": "tool_call"}
            for name, args in plan.calls
        ]

    def _chunks(self, plan: _Plan) -> Iterator[ChatGenerationChunk | RuntimeError]:
        """Chunks for ``plan``; a RuntimeError item means: raise it now."""
        tokens = re.findall(r"\S+\s*", plan.text)
        if plan.fail_after_words is not None:
            yield from (ChatGenerationChunk(message=AIMessageChunk(content=t)) for t in tokens)
            yield RuntimeError(
                f"Demo model failure after {plan.fail_after_words} words (requested by the user)."
            )
            return
        calls = self._tool_calls(plan)
        for i, tok in enumerate(tokens):
            last = i == len(tokens) - 1 and not calls
            yield ChatGenerationChunk(
                message=AIMessageChunk(content=tok, chunk_position="last" if last else None)
            )
        if calls or not tokens:
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content="",
                    tool_call_chunks=[
                        {
                            "type": "tool_call_chunk",
                            "name": c["name"],
                            "args": json.dumps(c["args"]),
                            "id": c["id"],
                            "index": i,
                        }
                        for i, c in enumerate(calls)
                    ],
                    chunk_position="last",
                )
            )

    # ---- BaseChatModel hooks -------------------------------------------------------------
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        plan = self._plan(messages)
        if plan.fail_after_words is not None:
            raise RuntimeError(
                f"Demo model failure after {plan.fail_after_words} words (requested by the user)."
            )
        message = AIMessage(content=plan.text, tool_calls=self._tool_calls(plan))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        # BaseChatModel.stream/_generate_with_cache report each chunk to the callbacks
        # (on_llm_new_token) themselves, so this method must not (tokens would double).
        delay = 1.0 / self.words_per_second if self.words_per_second > 0 else 0.0
        for item in self._chunks(self._plan(messages)):
            if isinstance(item, RuntimeError):
                raise item
            if delay and item.message.content:
                time.sleep(delay)
            yield item

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        delay = 1.0 / self.words_per_second if self.words_per_second > 0 else 0.0
        for item in self._chunks(self._plan(messages)):
            if isinstance(item, RuntimeError):
                raise item
            if delay and item.message.content:
                await asyncio.sleep(delay)
            yield item


def _trailing_tool_results(
    messages: Sequence[BaseMessage],
) -> tuple[AIMessage, list[ToolMessage]] | None:
    """(last AIMessage, the ToolMessages after it) when the history ends with tool results."""
    tool_messages: list[ToolMessage] = []
    for m in reversed(messages):
        if isinstance(m, ToolMessage):
            tool_messages.append(m)
            continue
        if isinstance(m, AIMessage) and tool_messages:
            tool_messages.reverse()
            return m, tool_messages
        return None
    return None
