"""What a reply had streamed when its run ended stays in the thread, marked as cut off.

A model message reaches the checkpoint only when the model node returns. Stop, the run's time
limit or a model error in the middle of a reply would drop every word the reader already saw.
``PartialReply`` records the text of the message streaming now (the run driver hands it each
token); ``keep_partial_reply`` writes that text as an assistant message tagged with why it was cut
off (``additional_kwargs["lc_source"] == PARTIAL_SOURCE``, ``lc_data = {"reason", "error"?}``):

* Stop: written as the node that routes a finished model message (the last ``after_model`` hook,
  else the model), so the run is over and the thread is idle; the next message goes on from there.
* The time limit or an error: written as the node that ran last, so the model is still next: the
  thread stays ``failed`` (``threads.views`` reads the error from the message) and Retry asks the
  model again, first taking the cut-off words away (``drop_failed_partial``) so it never reads them.
"""

# Tested by: tests/integration/runs/test_partial_reply.py - Stop, the time limit and a model error keep the words

from __future__ import annotations

import logging
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage

log = logging.getLogger("hitl_app.runs")

PARTIAL_SOURCE = "hitl_partial_reply"
"""``additional_kwargs["lc_source"]`` of an assistant message cut off by the end of its run."""

CutReason = Literal["stopped", "time_limit", "failed"]
"""Why a reply was cut off: Stop, the run's time limit, or an error of the model or a tool."""


class PartialReply:
    """The text streamed so far of the model message streaming now (``text``; ``""`` between messages)."""

    def __init__(self) -> None:
        self.text = ""

    def start(self) -> None:
        """A model message starts streaming, or has streamed all of it (it is saved with its node)."""
        self.text = ""

    def append(self, token: str) -> None:
        """One streamed token of the current message."""
        self.text += token


def cut_reason(message: BaseMessage) -> str:
    """``"stopped"``, ``"time_limit"`` or ``"failed"`` for a reply kept by ``keep_partial_reply``, else ``""``."""
    extra = getattr(message, "additional_kwargs", None) or {}
    if extra.get("lc_source") != PARTIAL_SOURCE:
        return ""
    return str((extra.get("lc_data") or {}).get("reason") or "stopped")


def cut_error(message: BaseMessage) -> str | None:
    """The error text a reply cut off by a failure or the time limit carries (None for any other message)."""
    if cut_reason(message) in ("", "stopped"):
        return None
    return str(((getattr(message, "additional_kwargs", None) or {}).get("lc_data") or {}).get("error") or "") or None


def _reply_end_node(graph: Any) -> str | None:
    """The node whose routing ends the run after a model message without tool calls: the one
    with edges both to the end and to ``tools`` (the last ``after_model`` hook), else ``model``."""
    targets: dict[str, set[str]] = {}
    drawn = getattr(graph, "get_graph", None)  # a remote runtime has none: the model node's name is all there is
    for edge in drawn().edges if drawn is not None else ():
        targets.setdefault(edge.source, set()).add(edge.target)
    for node, to in targets.items():
        if "__end__" in to and "tools" in to:
            return node
    return "model" if "model" in getattr(graph, "nodes", {}) else None


async def keep_partial_reply(graph: Any, config: dict[str, Any], text: str, reason: CutReason, error: str | None = None) -> bool:
    """Write ``text`` (what streamed of a reply cut off by ``reason``) into the thread's checkpoint;
    True when written. Nothing is written for blank text, a text the checkpoint already ends with
    (the message was saved), or a graph with no model node; a write that fails is logged.

    ``error``: the sentence the thread shows for a failure (kept with the message, see
    ``cut_error``). ``config`` addresses the thread (``{"configurable": {"thread_id"}}``)."""
    if not text.strip():
        return False
    try:
        snapshot = await graph.aget_state(config)
        messages = list((snapshot.values or {}).get("messages", []))
        last = messages[-1] if messages else None
        if isinstance(last, AIMessage) and last.text.strip() == text.strip():
            return False  # the message reached the checkpoint before the end
        as_node = _reply_end_node(graph) if reason == "stopped" else None
        if reason == "stopped" and as_node is None:
            return False
        data: dict[str, Any] = {"reason": reason, **({"error": error} if error else {})}
        reply = AIMessage(content=text, additional_kwargs={"lc_source": PARTIAL_SOURCE, "lc_data": data})
        await graph.aupdate_state(config, {"messages": [reply]}, as_node=as_node)
        return True
    except Exception:  # noqa: BLE001 - the run's end must still be announced; the words are lost as before
        log.exception("partial reply not kept thread=%s", (config.get("configurable") or {}).get("thread_id"))
        return False


async def drop_failed_partial(graph: Any, config: dict[str, Any], snapshot: Any) -> None:
    """Before Retry: take away the words of a reply cut off by a failure or the time limit (the last
    message), so the model answers afresh and never reads its own cut-off text. Raises what the
    checkpointer raises."""
    messages = list((snapshot.values or {}).get("messages", []))
    if messages and cut_error(messages[-1]) is not None and messages[-1].id:
        await graph.aupdate_state(config, {"messages": [RemoveMessage(id=messages[-1].id)]})
