"""An example of "your own agent" for hitl_app: a customer-support agent with its own tools and policy.

Run it (from the repository root, so ``examples`` is importable)::

    HITL_AGENT=examples.support_agent.agent:make_agent make run

Tools:
- ``lookup_order(order_id)``: read-only, runs without review;
- ``refund_payment(order_id, amount: float)``: approve / edit / reject;
- ``close_ticket(ticket_id, note)``: approve / reject.

Side effects are real and inspectable: every refund and closed ticket is appended as one JSON line
to ``<HITL_DATA_DIR>/support_actions.jsonl``.

The model: by default ``SupportDemoModel``, a deterministic offline model built on the app's
``DemoChatModel`` streaming machinery (it only understands the phrases below, so the example runs
without a network or an API key). Set ``SUPPORT_MODEL=openai:gpt-4o-mini`` (any ``init_chat_model``
spec) to drive the same tools and policy with a real model. Phrases of the offline model:
``look up order A-1001``, ``refund A-1001 12.50``, ``close ticket T-7: resolved by phone``.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from hitl_app.agent.demo import DemoChatModel, Plan

ORDERS: dict[str, dict[str, Any]] = {
    "A-1001": {"customer": "Ada Lovelace", "total": 42.50, "status": "delivered"},
    "A-1002": {"customer": "Alan Turing", "total": 19.99, "status": "lost in transit"},
}


def actions_file() -> Path:
    """Where refunds and closed tickets are recorded (``<HITL_DATA_DIR>/support_actions.jsonl``)."""
    return Path(os.environ.get("HITL_DATA_DIR", "data")) / "support_actions.jsonl"


def _record(kind: str, **fields: Any) -> None:
    path = actions_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"kind": kind, "at": datetime.now(UTC).isoformat(), **fields}) + "\n")


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order by id (e.g. A-1001): customer, total and status."""
    order = ORDERS.get(order_id)
    if order is None:
        return f"No order {order_id}."
    return f"Order {order_id}: {order['customer']}, total {order['total']:.2f}, {order['status']}."


@tool
def refund_payment(order_id: str, amount: float) -> str:
    """Refund `amount` (a number, in the order's currency) on order `order_id`."""
    order = ORDERS.get(order_id)
    if order is None:
        return f"No order {order_id}; nothing refunded."
    if not math.isfinite(amount) or amount <= 0 or amount > order["total"]:
        return f"Refused: {amount:.2f} is not between 0 and the order total {order['total']:.2f}."
    _record("refund", order_id=order_id, amount=amount)
    return f"Refunded {amount:.2f} on order {order_id}."


@tool
def close_ticket(ticket_id: str, note: str) -> str:
    """Close support ticket `ticket_id` with a closing `note` for the customer."""
    _record("close_ticket", ticket_id=ticket_id, note=note)
    return f"Closed ticket {ticket_id}."


TOOLS = [lookup_order, refund_payment, close_ticket]

INTERRUPT_ON: dict[str, Any] = {
    "refund_payment": {
        "allowed_decisions": ["approve", "edit", "reject"],
        "description": lambda tc, state, runtime: f"Refund {tc['args'].get('amount')} on order {tc['args'].get('order_id')}",
    },
    "close_ticket": {"allowed_decisions": ["approve", "reject"], "description": "Close a support ticket"},
    "lookup_order": False,
}
"""The example's own policy (HumanInTheLoopMiddleware ``interrupt_on``)."""

_LOOKUP = re.compile(r"^look\s*up\s+order\s+(?P<id>[\w-]+)\s*$", re.I)
_REFUND = re.compile(r"^refund\s+(?P<id>[\w-]+)\s+(?P<amount>\d+(?:\.\d+)?)\s*$", re.I)
_CLOSE = re.compile(r"^close\s+ticket\s+(?P<id>[\w-]+)\s*:\s*(?P<note>.+)$", re.I | re.S)


class SupportDemoModel(DemoChatModel):
    """Deterministic offline model for the example (phrases in the module docstring).

    Reuses ``DemoChatModel``'s streaming (word tokens, streamed tool-call chunks, pacing) and
    replaces only its planner: one tool call per recognised phrase; after tool results it repeats
    them ("Done: ..."); anything else gets a short help text.
    """

    def _plan(self, messages: Sequence[BaseMessage]) -> Plan:
        if messages and isinstance(messages[-1], ToolMessage):
            results = []
            for m in reversed(messages):
                if not isinstance(m, ToolMessage):
                    break
                results.insert(0, m.text)
            return Plan(text="Done: " + " ".join(results))
        human = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        text = (human.text if human is not None else "").strip()
        if m := _LOOKUP.match(text):
            return Plan(text=f"Looking up order {m['id']}.", calls=(("lookup_order", {"order_id": m["id"]}),))
        if m := _REFUND.match(text):
            args = {"order_id": m["id"], "amount": float(m["amount"])}
            return Plan(text=f"I will refund {args['amount']:.2f} on order {m['id']}.", calls=(("refund_payment", args),))
        if m := _CLOSE.match(text):
            args = {"ticket_id": m["id"], "note": m["note"].strip()}
            return Plan(text=f"I will close ticket {m['id']}.", calls=(("close_ticket", args),))
        return Plan(text="Try: look up order A-1001; refund A-1001 12.50; close ticket T-7: resolved.")


def make_model() -> Any:
    """``SUPPORT_MODEL`` (an ``init_chat_model`` spec) or the offline ``SupportDemoModel``."""
    spec = os.environ.get("SUPPORT_MODEL", "").strip()
    if spec:
        from langchain.chat_models import init_chat_model

        return init_chat_model(spec)
    return SupportDemoModel(words_per_second=float(os.environ.get("HITL_DEMO_WPS", "30")))


def make_agent(checkpointer: Any) -> Any:
    """The factory hitl_app calls with its checkpointer: ``HITL_AGENT=examples.support_agent.agent:make_agent``."""
    return create_agent(
        make_model(),
        TOOLS,
        system_prompt="You are a support agent. Refunds and ticket closures are reviewed by a person.",
        middleware=[HumanInTheLoopMiddleware(interrupt_on=INTERRUPT_ON, interrupt_mode="batched")],
        checkpointer=checkpointer,
    )
