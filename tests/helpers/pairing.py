"""The pairing invariant of a checkpointed message list (cases C1-C7).

Every tool call id of an assistant message must be answered by exactly one ToolMessage before the
next assistant or user message, and no ToolMessage may answer an id that was never issued.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage


def assert_pairing(messages: Sequence[Any], *, allow_pending_last: bool = False) -> None:
    """Raise AssertionError naming the first broken pair.

    Args:
        messages: LangChain messages in order (``state.values["messages"]``).
        allow_pending_last: accept unanswered calls on the LAST AIMessage (a review is pending).
    """
    issued: set[str] = set()
    answered: set[str] = set()
    pending: list[str] = []
    for i, m in enumerate(messages):
        if isinstance(m, (AIMessage, HumanMessage)):
            assert not pending, f"message {i} ({type(m).__name__}) follows unanswered tool calls {pending}"
            if isinstance(m, AIMessage):
                for tc in m.tool_calls:
                    assert tc["id"] not in issued, f"tool call id {tc['id']} issued twice"
                    issued.add(tc["id"])
                    pending.append(tc["id"])
        elif isinstance(m, ToolMessage):
            tid = m.tool_call_id
            assert tid in issued, f"message {i} answers tool call id {tid} that was never issued"
            assert tid not in answered, f"tool call id {tid} answered twice (message {i})"
            assert tid in pending, f"message {i} answers {tid} out of its turn"
            answered.add(tid)
            pending.remove(tid)
    if not allow_pending_last:
        assert not pending, f"tool calls left unanswered at the end: {pending}"
