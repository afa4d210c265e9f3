"""The real demo agent on a real AsyncSqliteSaver, driven like the UI does (v3 events + resume)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command
from sqlmodel import Session, select

from hitl_app.agent.demo import DemoChatModel
from hitl_app.review.tool_messages import Edited, Rejected, read_tool_message
from hitl_app.store.tables import OutboxMail, ToolEffect
from tests.helpers.pairing import assert_pairing
from tests.helpers.paths import ROOT
from tests.integration.conftest import drive

REPO = ROOT


def cfg() -> dict:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def user(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


def resume(*decisions) -> Command:
    return Command(resume={"decisions": list(decisions)})


async def messages(graph, config):
    return (await graph.aget_state(config)).values["messages"]


def mails(workspace) -> list[tuple[str, str]]:
    with Session(workspace.engine) as s:
        return [(m.to, m.subject) for m in s.exec(select(OutboxMail).order_by(OutboxMail.id)).all()]


async def test_approve_sends_the_mail(make_agent, workspace):
    graph, config = make_agent().graph, cfg()
    first = await drive(graph, user("email alice@example.com about the report: attached"), config)
    assert first.texts == ["I'll send an email to alice@example.com."]
    [intr] = first.interrupts
    assert intr.value["action_requests"] == [
        {"name": "send_email", "args": {"to": "alice@example.com", "subject": "the report", "body": "attached"},
         "description": "Send an email to alice@example.com: the report"}
    ]
    assert mails(workspace) == []  # nothing happens before the decision
    done = await drive(graph, resume({"type": "approve"}), config)
    assert done.interrupts == []
    assert done.texts == ["Sent the email to alice@example.com (subject: the report)."]
    assert mails(workspace) == [("alice@example.com", "the report")]
    msgs = await messages(graph, config)
    assert_pairing(msgs)
    assert [m.status for m in msgs if isinstance(m, ToolMessage)] == ["success"]


async def test_c2_edit_sends_only_to_carol_and_reply_names_carol(make_agent, workspace):
    graph, config = make_agent().graph, cfg()
    await drive(graph, user("email bob@example.com about lunch: see you at noon"), config)
    edited = {"to": "carol@example.com", "subject": "lunch", "body": "see you at noon"}
    done = await drive(graph, resume({"type": "edit", "edited_action": {"name": "send_email", "args": edited}}), config)
    assert mails(workspace) == [("carol@example.com", "lunch")]
    assert len(done.texts) == 1 and "carol@example.com" in done.texts[0]
    assert done.texts[0].startswith("A reviewer edited the call before it ran")
    assert done.tool_calls == [[]]  # the original call is not proposed again
    msgs = await messages(graph, config)
    assert_pairing(msgs)
    tool_msg = next(m for m in msgs if isinstance(m, ToolMessage))
    assert "a human reviewer replaced this tool call" in tool_msg.text and "carol@example.com" in tool_msg.text
    reading = read_tool_message(tool_msg)
    assert isinstance(reading, Edited) and (reading.name, reading.args) == ("send_email", edited)


async def test_c1_reject_keeps_the_file_and_says_so(make_agent, workspace):
    graph, config = make_agent().graph, cfg()
    target = workspace.space().files_dir / "notes/old.txt"
    await drive(graph, user("delete notes/old.txt"), config)
    done = await drive(graph, resume({"type": "reject", "message": "not now"}), config)
    assert target.exists()
    assert done.texts == ["The delete of notes/old.txt did not happen: the reviewer rejected it (reason: not now)."]
    msgs = await messages(graph, config)
    assert_pairing(msgs)
    tool_msgs = [m for m in msgs if isinstance(m, ToolMessage)]
    assert len(tool_msgs) == 1 and "not now" in tool_msgs[0].text and tool_msgs[0].status == "error"
    with Session(workspace.engine) as s:  # delete_file never ran
        assert s.exec(select(ToolEffect)).all() == []


async def test_respond_answers_ask_user_without_running_it(make_agent, workspace):
    graph, config = make_agent().graph, cfg()
    first = await drive(graph, user("ask me which colour the button should be"), config)
    assert first.interrupts[0].value["review_configs"] == [{"action_name": "ask_user", "allowed_decisions": ["respond"]}]
    done = await drive(graph, resume({"type": "respond", "message": "blue"}), config)
    assert done.texts == ["You answered: blue."]
    assert_pairing(await messages(graph, config))


def _policy_with_delete_edit():
    """Case C5 edits a delete's path; issue 2's default policy allows approve/reject only there."""
    from hitl_app.agent.policy import DEFAULT_POLICY, PolicyRule

    return [
        PolicyRule("delete_file", ["approve", "edit", "reject"], r.description, r.condition) if r.tool == "delete_file" else r
        for r in DEFAULT_POLICY
    ]


async def test_default_policy_allows_only_approve_and_reject_on_delete(make_agent):
    graph, config = make_agent().graph, cfg()
    first = await drive(graph, user("delete notes/x.txt"), config)
    [intr] = first.interrupts
    assert intr.value["review_configs"][0]["allowed_decisions"] == ["approve", "reject"]


async def test_c5_parallel_batch_each_decision_lands_on_its_call(make_agent, workspace):
    graph, config = make_agent(policy_rules=_policy_with_delete_edit()).graph, cfg()
    first = await drive(
        graph, user("email alice@example.com about a and email bob@example.com about b and delete notes/x.txt"), config
    )
    [intr] = first.interrupts
    assert [a["name"] for a in intr.value["action_requests"]] == ["send_email", "send_email", "delete_file"]
    assert len({tc["id"] for tc in first.tool_calls[0]}) == 3
    done = await drive(
        graph,
        resume(
            {"type": "approve"},
            {"type": "reject", "message": "not bob"},
            {"type": "edit", "edited_action": {"name": "delete_file", "args": {"path": "notes/y.txt"}}},
        ),
        config,
    )
    assert mails(workspace) == [("alice@example.com", "a")]
    assert not (workspace.space().files_dir / "notes/y.txt").exists()
    assert (workspace.space().files_dir / "notes/x.txt").exists()
    text = done.texts[-1]
    assert "Sent the email to alice@example.com" in text
    assert "The email to bob@example.com did not happen" in text and "not bob" in text
    assert "deleted notes/y.txt instead" in text
    assert_pairing(await messages(graph, config))


async def test_read_only_sql_runs_without_review_but_update_pauses(make_agent, workspace):
    graph, config = make_agent().graph, cfg()
    read = await drive(graph, user("sql: SELECT count(*) AS n FROM records"), config)
    assert read.interrupts == []
    assert '"rows": [[10]]' in read.texts[-1].replace("\\", "")  # markdown escapes, as rendered
    write = await drive(graph, user("sql: UPDATE records SET amount = 0"), config)
    assert [a["name"] for a in write.interrupts[0].value["action_requests"]] == ["execute_sql"]
    done = await drive(graph, resume({"type": "approve"}), config)
    assert "10 rows affected" in done.texts[-1]
    assert_pairing(await messages(graph, config))


async def test_write_under_drafts_runs_without_review_but_notes_pauses(make_agent, workspace):
    graph, config = make_agent().graph, cfg()
    out = await drive(graph, user("write drafts/idea.md: a plan"), config)
    assert out.interrupts == []
    assert (workspace.space().files_dir / "drafts/idea.md").read_text() == "a plan"
    out = await drive(graph, user("write notes/idea.md: a plan"), config)
    assert len(out.interrupts) == 1 and not (workspace.space().files_dir / "notes/idea.md").exists()


async def test_tool_error_becomes_an_error_message_not_a_crash(make_agent, workspace):
    graph, config = make_agent().graph, cfg()
    await drive(graph, user("delete notes/none.txt"), config)
    done = await drive(graph, resume({"type": "approve"}), config)
    assert done.texts == ["delete_file failed: File not found: notes/none.txt."]
    msgs = await messages(graph, config)
    assert_pairing(msgs)
    assert [m.status for m in msgs if isinstance(m, ToolMessage)] == ["error"]
    follow = await drive(graph, user("read records"), config)  # the thread still works
    assert follow.interrupts == [] and "Office chairs" in follow.texts[-1]


class StubbornModel(DemoChatModel):
    """Test-only: after a rejection it proposes the identical call again (case C3)."""

    def _plan(self, messages):
        plan = super()._plan(messages)
        last = messages[-1]
        if isinstance(last, ToolMessage) and isinstance(read_tool_message(last), Rejected):
            ai = next(m for m in reversed(messages) if isinstance(m, AIMessage))
            calls = tuple((tc["name"], tc["args"]) for tc in ai.tool_calls)
            return type(plan)(text="Let me try that again.", calls=calls)
        return plan


async def test_c3_identical_call_after_rejection_stops_the_loop(make_agent, workspace):
    graph, config = make_agent(model=StubbornModel(words_per_second=0)).graph, cfg()
    await drive(graph, user("delete notes/old.txt"), config)
    done = await drive(graph, resume({"type": "reject", "message": "keep it"}), config)
    assert done.interrupts == []  # no second card
    assert done.tool_calls[0][0]["name"] == "delete_file"  # the model did re-propose it
    assert (workspace.space().files_dir / "notes/old.txt").exists()
    msgs = await messages(graph, config)
    assert_pairing(msgs)
    assert isinstance(msgs[-1], AIMessage) and msgs[-1].text.startswith("I stopped here")
    guard_msg = [m for m in msgs if isinstance(m, ToolMessage)][-1]
    assert guard_msg.status == "error"
    assert "not executed" in guard_msg.text.lower() and "unless the user explicitly asks" in guard_msg.text
    follow = await drive(graph, user("read records"), config)  # a following turn works
    assert follow.interrupts == []
    assert_pairing(await messages(graph, config))


async def test_c3_a_different_call_after_rejection_still_gets_a_card(make_agent):
    class Alternating(StubbornModel):
        def _plan(self, messages):
            plan = super()._plan(messages)
            if plan.calls and plan.text == "Let me try that again.":
                return type(plan)(text="Another file then.", calls=(("delete_file", {"path": "notes/y.txt"}),))
            return plan

    graph, config = make_agent(model=Alternating(words_per_second=0)).graph, cfg()
    await drive(graph, user("delete notes/old.txt"), config)
    out = await drive(graph, resume({"type": "reject"}), config)
    assert [a["args"] for a in out.interrupts[0].value["action_requests"]] == [{"path": "notes/y.txt"}]


CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    from langgraph.types import Command
    from hitl_app.agent.build import build_demo_agent
    from hitl_app.agent.checkpoint import open_checkpointer
    from hitl_app.agent.demo import DemoChatModel
    from hitl_app.agent.workspace import DemoWorkspace
    from hitl_app.store.db import make_engines

    async def main(tmp, url, thread_id, expected_path):
        expected = json.load(open(expected_path))
        engines = make_engines(url)
        tmp_dir = __import__("pathlib").Path(tmp)
        ws = DemoWorkspace(tmp_dir / "files", engines.sync, tmp_dir / "demo.sqlite")
        async with open_checkpointer(url) as saver:
            graph = build_demo_agent(model=DemoChatModel(words_per_second=0), workspace=ws, checkpointer=saver).graph
            config = {"configurable": {"thread_id": thread_id}}
            state = await graph.aget_state(config)
            [intr] = state.interrupts
            same = intr.id == expected["id"] and intr.value == expected["value"]
            types = [type(intr.value).__name__, type(intr.value["action_requests"]).__name__,
                     type(intr.value["action_requests"][0]["args"]).__name__]
            await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
            final = (await graph.aget_state(config)).values["messages"][-1].text
        print(json.dumps({"same": same, "types": types, "final": final}))

    asyncio.run(main(*sys.argv[1:]))
    """
)


async def test_c7_pending_review_resumes_in_a_new_process(make_agent, workspace, saver, checkpoint_url, tmp_path):
    graph, config = make_agent().graph, cfg()
    first = await drive(graph, user("email dora@example.com about plans: see you"), config)
    [intr] = first.interrupts
    expected = tmp_path / "expected.json"
    expected.write_text(json.dumps({"id": intr.id, "value": intr.value}))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), checkpoint_url, config["configurable"]["thread_id"], str(expected)],
        capture_output=True, text=True, env=env, timeout=60, cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["same"] is True
    assert report["types"] == ["dict", "list", "dict"]
    assert report["final"] == "Sent the email to dora@example.com (subject: plans)."
    assert mails(workspace) == [("dora@example.com", "plans")]  # the tool ran once, in the child
    msgs = await messages(graph, config)  # this process sees the child's result
    assert_pairing(msgs)
    again = await drive(graph, resume({"type": "approve"}), config)  # duplicate resume: no second mail
    assert again.interrupts == []
    assert mails(workspace) == [("dora@example.com", "plans")]


async def test_stream_reply_arrives_in_many_tokens(make_agent):
    graph, config = make_agent().graph, cfg()
    out = await drive(graph, user("stream 40 words"), config)
    assert len(out.texts[0].split()) == 40 and out.token_counts[0] >= 40
    final = (await messages(graph, config))[-1]
    assert final.text == out.texts[0]


async def test_fail_after_words_raises_from_the_stream_and_thread_recovers(make_agent):
    graph, config = make_agent().graph, cfg()
    with pytest.raises(RuntimeError, match="Demo model failure after 3 words"):
        await drive(graph, user("fail after 3 words"), config)
    out = await drive(graph, user("read records"), config)
    assert out.interrupts == []
    assert_pairing(await messages(graph, config))


async def test_m4_pending_review_survives_a_schema_change_made_elsewhere(make_agent, workspace):
    """The SELECT in a batch was auto-approved when the card was raised; another thread then drops
    its table. Approving the card must still run the turn: the policy answers "needs review?" once
    per tool call, not again against the changed schema."""
    graph = make_agent().graph
    viewer, other = cfg(), cfg()
    first = await drive(graph, user("email pat@example.com about budget: ok and sql: SELECT count(*) FROM records"), viewer)
    [intr] = first.interrupts
    assert [a["name"] for a in intr.value["action_requests"]] == ["send_email"]  # the SELECT needs no card

    await drive(graph, user("sql: DROP TABLE records"), other)
    dropped = await drive(graph, resume({"type": "approve"}), other)
    assert "rows affected" in dropped.texts[-1]

    done = await drive(graph, resume({"type": "approve"}), viewer)
    assert done.interrupts == []
    assert mails(workspace) == [("pat@example.com", "budget")]
    text = done.texts[-1]
    assert "Sent the email to pat@example.com" in text
    assert "execute_sql failed" in text and "no such table: records" in text
    assert_pairing(await messages(graph, viewer))
