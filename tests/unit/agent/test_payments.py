"""transfer_funds: a real payment in the ledger, exactly once per tool call, bad input refused."""

from __future__ import annotations

import threading

import pytest
from langchain.tools import ToolRuntime

from hitl_app.agent.payments import payments, transfer_once


def runtime(call_id: str, thread_id: str = "t1") -> ToolRuntime:
    return ToolRuntime(
        state={}, context=None, config={"configurable": {"thread_id": thread_id, "owner": "mia"}},
        stream_writer=lambda _: None, tool_call_id=call_id, store=None,
    )


def pay(tool, call_id: str, thread_id: str = "t1", **args):
    return tool.invoke(
        {"type": "tool_call", "id": call_id, "name": tool.name, "args": {**args, "runtime": runtime(call_id, thread_id)}}
    )


def test_a_transfer_is_a_row_in_the_ledger(tools, workspace):
    msg = pay(tools["transfer_funds"], "c1", amount=1500, to="Bob")
    assert msg.status == "success" and msg.text == "Paid 1,500.00 to Bob."
    [row] = payments(workspace.space("mia").demo_db)
    assert (row.tool_call_id, row.amount, row.recipient) == ("t1:c1", 1500.0, "Bob")


def test_a_replay_of_the_same_call_does_not_pay_again(tools, workspace):
    first = pay(tools["transfer_funds"], "c1", amount=20.499, to=" Bob ")
    again = pay(tools["transfer_funds"], "c1", amount=20.499, to=" Bob ")
    other_thread = pay(tools["transfer_funds"], "c1", thread_id="t2", amount=20.499, to="Bob")
    assert first.text == again.text == other_thread.text == "Paid 20.50 to Bob."
    assert [(p.tool_call_id, p.amount, p.recipient) for p in payments(workspace.space("mia").demo_db)] == [
        ("t1:c1", 20.5, "Bob"), ("t2:c1", 20.5, "Bob")
    ]


def test_concurrent_replays_pay_once(workspace):
    results: list[str] = []

    def run() -> None:
        results.append(transfer_once(workspace.space("mia").demo_db, "t1:race", 99, "Ann"))

    threads = [threading.Thread(target=run) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["Paid 99.00 to Ann."] * 6
    assert len(payments(workspace.space("mia").demo_db)) == 1


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"amount": 0, "to": "Bob"}, "`amount`: Input should be greater than 0"),
        ({"amount": -5, "to": "Bob"}, "`amount`: Input should be greater than 0"),
        ({"amount": float("inf"), "to": "Bob"}, "`amount`: Input should be a finite number"),
        ({"amount": float("nan"), "to": "Bob"}, "`amount`: Input should be a finite number"),
        ({"amount": 2e9, "to": "Bob"}, "`amount`: Input should be less than or equal to"),
        ({"amount": 5, "to": ""}, "`to`: String should have at least 1 character"),
        ({"amount": 5, "to": "   "}, "The recipient must be a name"),
        ({"amount": 5, "to": "Bob\nDROP"}, "The recipient must be a name"),
        ({"amount": 0.001, "to": "Bob"}, "The amount must be more than 0"),
    ],
)
def test_bad_amounts_and_names_pay_nothing(tools, workspace, args, needle):
    msg = pay(tools["transfer_funds"], "bad", **args)
    assert msg.status == "error" and needle in msg.text
    assert payments(workspace.space("mia").demo_db) == []


def test_the_ledger_is_empty_before_the_first_payment(tmp_path):
    assert payments(tmp_path / "none.sqlite") == []
