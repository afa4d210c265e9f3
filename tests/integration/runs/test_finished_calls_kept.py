"""A tool call that finished keeps its real result after every way a run can end (issue 19).

One model message starts five parallel calls of every kind: an auto-run write (``drafts/``), an
approved mail, an edited mail, a delete a grant approves, and a slow wait. While the wait runs the
run ends: Stop, the run's time limit, a crash of the tool, or a killed worker. The four calls that
finished must keep their results in the checkpoint (the thread shows them done, the agent's next
reply says so), only the wait is answered as not finished, and every tool call is answered exactly
once. Real demo agent, SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import uuid

import pytest
from sqlmodel import Session, select

from hitl_app.agent.workspace import DemoWorkspace
from hitl_app.desk.cards import BrowserPerson
from hitl_app.runs.pairing import CANCEL_SOURCE
from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings
from hitl_app.store.tables import OutboxMail
from tests.helpers.pairing import assert_pairing

OWNER = "browser-1"
ANN = BrowserPerson(OWNER, "ann")
APPROVE = {"type": "approve"}
FIVE = (
    "write drafts/a.txt: hi; email zed@example.com about once: x; email bob@example.com about two: y;"
    " delete notes/y.txt; wait {seconds} seconds"
)
pytestmark = pytest.mark.asyncio(loop_scope="module")


def settings_for(tmp_path, database_url, **extra) -> Settings:
    return Settings(HITL_DATA_DIR=tmp_path, HITL_MODEL="demo", HITL_DEMO_WPS=0, DATABASE_URL=database_url, **extra)


async def grant_deletes(svc, t: str) -> None:
    """A first turn whose approval grants ``delete_file`` for the rest of the thread."""
    await svc.start_turn(t, "delete notes/x.txt", owner=OWNER)
    await svc.wait(t)
    view = await svc.load(t, owner=OWNER)
    await svc.submit_review(t, view.pending.interrupt_id, [APPROVE], person=ANN, grants=[{"scope": "thread", "hours": 1}])
    await svc.wait(t)


async def start_five(svc, t: str, seconds: int = 8) -> None:
    """Send the five calls and decide them: approve, edit (bob -> carol), the grant's, approve the wait."""
    await svc.start_turn(t, FIVE.format(seconds=seconds), owner=OWNER)
    await svc.wait(t)
    view = await svc.load(t, owner=OWNER)
    names = [a.name for a in view.pending.action_requests]
    assert names == ["send_email", "send_email", "slow_task"], names  # the write runs at once, the grant took the delete
    edit = {"type": "edit", "edited_action": {"name": "send_email",
                                              "args": {"to": "carol@example.com", "subject": "two", "body": "y"}}}
    await svc.submit_review(t, view.pending.interrupt_id, [APPROVE, edit, APPROVE], person=ANN)


async def wait_for_the_four(svc, t: str) -> None:
    """Until the four quick calls have finished (their results are pending writes of the step); a
    generous deadline, as a loaded CI machine may be slow to run them."""
    deadline = asyncio.get_running_loop().time() + 120
    while asyncio.get_running_loop().time() < deadline:
        snapshot = await svc.graph.aget_state(svc.config(t))
        done = [x for x in snapshot.tasks if isinstance(x.result, dict) and x.result.get("messages")]
        if len(done) >= 4:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the four quick calls did not finish")


def mails(tmp_path, database_url) -> list[str]:
    from hitl_app.store.db import make_engines

    engines = make_engines(database_url)
    try:
        with Session(engines.sync) as s:
            return sorted(m.to for m in s.exec(select(OutboxMail)))
    finally:
        engines.sync.dispose()


async def assert_the_truth(svc, t: str, tmp_path, database_url, *, not_run: str, outcome: str = "cancelled") -> None:
    """Each finished call answered by its real result, the wait by ``not_run``, pairing holds."""
    messages = (await svc.graph.aget_state(svc.config(t))).values["messages"]
    assert_pairing(messages)
    [five] = [i for i, m in enumerate(messages) if len(getattr(m, "tool_calls", None) or []) == 5]
    ids = {c["id"] for c in messages[five].tool_calls}
    answered = [m for m in messages[five + 1 :] if m.type == "tool" and m.tool_call_id in ids]
    answers = {m.name: m for m in answered}
    for name in ("write_file", "send_email", "delete_file"):
        assert answers[name].additional_kwargs.get("lc_source") != CANCEL_SOURCE, (name, answers[name].content)
    sent = {str(m.content) for m in answered if m.name == "send_email"}  # the edit's carries a note first
    assert "Email sent to zed@example.com (subject: once)." in sent
    assert any(r.endswith("Email sent to carol@example.com (subject: two).") for r in sent), sent
    assert answers["write_file"].content == "Wrote 2 bytes to drafts/a.txt."
    assert answers["delete_file"].content == "Deleted notes/y.txt."
    assert not_run in str(answers["slow_task"].content)
    view = await svc.load(t, owner=OWNER)
    rows = [(m.tool_name, m.outcome) for m in view.messages if m.role == "tool" and m.tool_call_id in ids]
    assert sorted(rows) == sorted([("write_file", "executed"), ("send_email", "executed"), ("send_email", "edited"),
                                   ("delete_file", "executed"), ("slow_task", outcome)]), rows
    assert mails(tmp_path, database_url) == ["carol@example.com", "zed@example.com"]  # once each, bob never
    # the audit's Executed column: the arguments of what ran, nothing for the call that did not (QA M11)
    audit = await svc.audit_for_thread(t)
    executed = {audit[m.tool_call_id].tool_name: audit[m.tool_call_id].args_executed for m in answered if m.tool_call_id in audit}
    assert executed["slow_task"] is None, executed
    assert executed["send_email"] is not None and executed["delete_file"] == {"path": "notes/y.txt"}


async def continue_and_check_the_reply(svc, t: str) -> None:
    """Continue: the agent's summary says each finished call was done, none "got no result"."""
    await svc.continue_run(t, owner=OWNER)
    await svc.wait(t)
    view = await svc.load(t, owner=OWNER)
    reply = view.messages[-1].text
    assert view.status == "idle" and "got no result" not in reply, reply
    assert "zed@example.com" in reply and "carol@example.com" in reply


@pytest.mark.parametrize("ending", ["stop", "time_limit", "crash"])
async def test_finished_parallel_calls_keep_their_results(tmp_path, database_url, ending, monkeypatch):
    extra = {"HITL_RUN_TIMEOUT_SECONDS": 4} if ending == "time_limit" else {}
    async with open_runtime(settings_for(tmp_path, database_url, **extra)) as rt:
        svc, t = rt.service, str(uuid.uuid4())
        await grant_deletes(svc, t)
        if ending == "crash":
            real = DemoWorkspace.run_once

            def crashing(self, key, tool_name, effect, *, owner=""):
                if tool_name == "slow_task":
                    raise RuntimeError("the disk went away")
                return real(self, key, tool_name, effect, owner=owner)

            monkeypatch.setattr(DemoWorkspace, "run_once", crashing)
        await start_five(svc, t, seconds=1 if ending == "crash" else 8)
        if ending == "stop":
            await wait_for_the_four(svc, t)
            assert await svc.stop(t, owner=OWNER)
            not_run = "Cancelled by the user (Stop)"
        else:
            await svc.wait(t, timeout=30)
            not_run = "time limit" if ending == "time_limit" else "the run failed"
        if ending == "crash":  # the next message answers the failed run's open call
            await svc.start_turn(t, "how are you", owner=OWNER)
            await svc.wait(t)
        outcome = "error" if ending == "crash" else "cancelled"  # a failure is an error; an ending by the user or a limit is not
        await assert_the_truth(svc, t, tmp_path, database_url, not_run=not_run, outcome=outcome)
        if ending != "crash":
            await continue_and_check_the_reply(svc, t)
        assert mails(tmp_path, database_url) == ["carol@example.com", "zed@example.com"]


_KILLED = textwrap.dedent(
    """
    import asyncio, sys
    from hitl_app.runtime import open_runtime
    from tests.integration.runs.test_finished_calls_kept import settings_for, grant_deletes, start_five, wait_for_the_four

    async def main(data_dir, url, thread_id):
        async with open_runtime(settings_for(data_dir, url)) as rt:
            await grant_deletes(rt.service, thread_id)
            await start_five(rt.service, thread_id, seconds=20)
            await wait_for_the_four(rt.service, thread_id)
            print("FOUR DONE", flush=True)
            await asyncio.sleep(60)

    asyncio.run(main(*sys.argv[1:]))
    """
)


async def test_finished_parallel_calls_survive_a_killed_worker(tmp_path, database_url):
    t = str(uuid.uuid4())
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED, str(tmp_path), database_url, t],
        stdout=subprocess.PIPE, cwd=os.getcwd(), env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    try:
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 90)
        assert line.strip() == b"FOUR DONE"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    async with open_runtime(settings_for(tmp_path, database_url)) as rt:
        svc = rt.service
        await svc.start_turn(t, "how are you", owner=OWNER)
        await svc.wait(t)
        await assert_the_truth(svc, t, tmp_path, database_url, not_run="the server stopped")
