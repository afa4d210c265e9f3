"""The agent's state with ``messages`` stored as deltas, so a checkpoint does not copy the history.

``create_agent``'s default ``AgentState`` keeps ``messages`` in a ``BinaryOperatorAggregate``
channel: every checkpoint stores the whole list again, so the bytes a turn adds grow with the
length of the thread (quadratic in total). ``DeltaChannel`` (LangGraph 1.2, beta) stores only each
step's new messages (the writes) and, every ``SNAPSHOT_EVERY`` updates, one full copy; a read
replays the writes since the last copy. Both the SQLite and the PostgreSQL saver implement the
history read it needs (``get_delta_channel_history``). A thread written with the old channel still
loads: its last full list is taken as the starting value.

The reducer must give the same result however LangGraph batches the writes when it replays them,
so it folds ``add_messages`` over each write in order.
"""

# Tested by: tests/integration/agent/test_checkpoint_growth.py - through the built agent's state schema

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Required, cast

from langchain.agents.middleware.types import AgentState
from langchain_core.messages import AnyMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.graph.message import Messages, add_messages

SNAPSHOT_EVERY = 100
"""Updates of ``messages`` between two full copies (LangGraph's default; about 50 turns)."""


def fold_messages(messages: list[AnyMessage], writes: Sequence[Any]) -> list[AnyMessage]:
    """Apply each write to ``messages`` with ``add_messages``, in order (batching-invariant).

    Each write is what a node returned for ``messages`` (a message, a list of them, dicts, or
    ``RemoveMessage``s). Returns the new list; ``messages`` is not changed.
    """
    folded = cast(Messages, messages)  # add_messages takes and returns a wider type than it uses here
    for write in writes:
        folded = add_messages(folded, write)
    return cast(list[AnyMessage], folded)


class DeltaAgentState(AgentState):
    """``AgentState`` whose ``messages`` channel stores deltas (pass as ``create_agent(state_schema=...)``)."""

    messages: Required[Annotated[list[AnyMessage], DeltaChannel(fold_messages, snapshot_frequency=SNAPSHOT_EVERY)]]
