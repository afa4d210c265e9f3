"""The offline demo chat model: deterministic, streamed, tool-calling.

``DemoChatModel`` is the app's default model (``HITL_MODEL=demo``). It needs no network and no
keys, and it behaves the same way every time, which makes the whole app demonstrable and testable.
It understands the phrases listed in ``hitl_app.agent.demo.phrases`` (in the LAST human message).

After tool results (ToolMessages trailing the last AIMessage) it streams a summary, one sentence
per tool call (``hitl_app.agent.demo.summary``), and ends the turn: it never proposes a call again
after results, so after a reviewer's edit the original call is not proposed a second time.

Streaming: tokens are words with their following whitespace; tool calls are sent as
``tool_call_chunks`` in the last chunk, because LangChain's stock fake chat models drop
``tool_calls`` when streamed. Tool call ids are ``call_<uuid4 hex>``, unique across threads and
processes.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

from hitl_app.agent.demo.phrases import HELP_TEXT, Plan, parse_request, text_reply_plan
from hitl_app.agent.demo.summary import intro_sentence, summarize_tool_result


class DemoChatModel(BaseChatModel):
    """Deterministic offline chat model (phrases in ``hitl_app.agent.demo.phrases``).

    Subclasses may replace ``_plan(messages) -> Plan`` to understand other phrases and keep the
    streaming (see ``examples/support_agent``).

    Fields:
        words_per_second: streaming pace in words per second, held against the clock (``_Pace``);
            0 disables pacing.
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

    def bind_tools(
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
    def _plan(self, messages: Sequence[BaseMessage]) -> Plan:
        """Decide the reply for ``messages`` (pure except for fresh tool call ids)."""
        results = _trailing_tool_results(messages)
        if results is not None:
            ai, tool_messages = results
            by_id: dict[str | None, ToolMessage] = {m.tool_call_id: m for m in tool_messages}
            sentences = [summarize_tool_result(tc, by_id.get(tc["id"])) for tc in ai.tool_calls]
            return Plan(text=" ".join(sentences) or "Done.")
        human = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        text = (human.text if human is not None else "").strip()
        if (plain := text_reply_plan(text)) is not None:
            return plain
        bound = set(self.bound_tool_names or [])
        calls = [c for c in parse_request(text) or [] if c[0] in bound]
        if not calls:
            return Plan(text=HELP_TEXT)
        return Plan(text=intro_sentence(calls), calls=tuple(calls))

    @staticmethod
    def _tool_calls(plan: Plan) -> list[dict[str, Any]]:
        return [
            {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex}", "type": "tool_call"}
            for name, args in plan.calls
        ]

    def _chunks(self, plan: Plan) -> Iterator[ChatGenerationChunk | RuntimeError]:
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
        pace = _Pace(self.words_per_second, time.monotonic)
        for item in self._chunks(self._plan(messages)):
            if isinstance(item, RuntimeError):
                raise item
            if item.message.content and (wait := pace.next_wait()) > 0:
                time.sleep(wait)
            yield item

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        pace = _Pace(self.words_per_second, asyncio.get_running_loop().time)
        for item in self._chunks(self._plan(messages)):
            if isinstance(item, RuntimeError):
                raise item
            if item.message.content and (wait := pace.next_wait()) > 0:
                await asyncio.sleep(wait)
            yield item


class _Pace:
    """The demo model's clock: content token k (1, 2, ...) is due ``k / words_per_second`` seconds
    after the stream started, like a remote model's stream, whose rate does not depend on how busy
    the reader is. A ``sleep(1 / rate)`` per token instead adds every overshoot of the sleep (about
    10% at 100 words/s, more on a busy event loop) to the reply's length.

    A reader that fell more than ``MAX_BEHIND_S`` behind (the process stalled) gets at most
    ``MAX_BEHIND_S`` worth of tokens at once; the rest of the missed time is not made up.
    """

    MAX_BEHIND_S = 0.25

    def __init__(self, words_per_second: float, clock: Callable[[], float]) -> None:
        self.step = 1.0 / words_per_second if words_per_second > 0 else 0.0
        self.clock = clock
        self.due = clock()

    def next_wait(self) -> float:
        """Seconds to wait before the next content token (0.0: send it now; always 0.0 unpaced)."""
        if not self.step:
            return 0.0
        now = self.clock()
        self.due = max(self.due + self.step, now - self.MAX_BEHIND_S)
        return self.due - now


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
