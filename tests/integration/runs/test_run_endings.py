"""Pairing after every way a run can end, then one more turn through a real provider client.

The provider is the loopback OpenAI-compatible server, which refuses an unpaired history with
HTTP 400 exactly like the real API. Each test ends a run one way (finished, failed, Stop while the
model streams, Stop while an approved tool runs, a killed worker, the run's time or step limit)
and then sends the next message, presses Continue or reloads; the thread must answer, show why a
call has no result, and keep every tool call answered in the checkpoint.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from hitl_app.agent.workspace import DemoWorkspace
from hitl_app.desk.cards import BrowserPerson
from hitl_app.runs import run_driver
from hitl_app.runs.tool_work import TOOL_WORK
from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings
from hitl_app.store.audit_proof import verify_database
from tests.helpers.fake_openai import FakeOpenAI, unpaired_tool_calls
from tests.helpers.pairing import assert_pairing

OWNER = "browser-1"
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture
def fake_openai(monkeypatch):
    server = FakeOpenAI(delay=0.01).start()
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    yield server
    server.stop()


def settings_for(tmp_path, database_url, **extra) -> Settings:
    return Settings(
        HITL_DATA_DIR=tmp_path, HITL_MODEL="openai:fake-model", HITL_MODEL_MAX_RETRIES=0, DATABASE_URL=database_url, **extra
    )


async def checkpointed(service, thread_id):
    return (await service.graph.aget_state(service.config(thread_id))).values.get("messages", [])


async def next_turn_answers(service, fake, thread_id, text="how are you") -> None:
    """Send ``text``; the provider must accept the history and answer it; pairing holds."""
    await service.start_turn(thread_id, text, owner=OWNER)
    await service.wait(thread_id)
    view = await service.load(thread_id, owner=OWNER)
    assert not fake.refused, f"the provider refused the history: {unpaired_tool_calls(fake.refused[-1]['messages'])}"
    assert view.status == "idle", (view.status, view.error)
    assert view.messages[-1].text == f"You said: {text}"
    assert_pairing(await checkpointed(service, thread_id))


DEADLINE_S = 30.0
"""Generous deadline (seconds) for an event a test waits on; a loaded machine only makes waits longer."""


async def until(check, what: str, timeout_s: float = DEADLINE_S) -> None:
    """Wait until the coroutine function ``check()`` returns true; fail after ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, f"{what}: not reached in {timeout_s} s"
        await asyncio.sleep(0.02)


async def approve_slow_task(service, thread_id, seconds=30) -> None:
    """``wait N seconds`` (30, the tool's longest: it cannot end by itself while a test acts),
    approve the card, return once the approved run is live."""
    await service.start_turn(thread_id, f"wait {seconds} seconds", owner=OWNER)
    await service.wait(thread_id)
    view = await service.load(thread_id, owner=OWNER)
    assert view.pending is not None and view.pending.action_requests[0].name == "slow_task"
    await service.submit_review(thread_id, view.pending.interrupt_id, [{"type": "approve"}], person=BrowserPerson(OWNER, "ann"))
    await until(lambda: service.is_running(thread_id), "the approved run is live")
    await until(lambda: _true(bool(TOOLS_STARTED)), "the approved tool started")


TOOLS_STARTED: list[str] = []
"""Effect keys of the tools that got as far as checking for an earlier result, i.e. started running."""


@pytest.fixture(autouse=True)
def tools_started(monkeypatch):
    """Spy (calling through) on ``DemoWorkspace.recorded_result``, which ``slow_task`` calls first."""
    real = DemoWorkspace.recorded_result

    def spy(self, key):
        TOOLS_STARTED.append(key)
        return real(self, key)

    TOOLS_STARTED.clear()
    monkeypatch.setattr(DemoWorkspace, "recorded_result", spy)


async def _true(value: bool) -> bool:
    return value


def cancelled_rows(view):
    return [m for m in view.messages if m.role == "tool" and "Cancelled by the user" in m.text]


async def test_finished_and_failed_runs_then_a_turn(fake_openai, tmp_path, database_url):
    async with open_runtime(settings_for(tmp_path, database_url)) as rt:
        t = str(uuid.uuid4())
        await next_turn_answers(rt.service, fake_openai, t, "hello")
        fake_openai.fail_next("500")
        await rt.service.start_turn(t, "this one fails", owner=OWNER)
        await rt.service.wait(t)
        assert (await rt.service.load(t, owner=OWNER)).status == "failed"
        await next_turn_answers(rt.service, fake_openai, t)


async def test_stop_while_the_model_streams_then_a_turn(fake_openai, tmp_path, database_url):
    async with open_runtime(settings_for(tmp_path, database_url)) as rt:
        t = str(uuid.uuid4())
        await rt.service.start_turn(t, "stream 3000 words", owner=OWNER)  # 30 s of text: Stop comes mid-stream
        events = rt.service.subscribe(t)
        async with asyncio.timeout(DEADLINE_S):
            async for event in events:
                if event.kind == "text" and event.delta.strip():
                    break
        await events.aclose()
        assert await rt.service.stop(t, owner=OWNER)
        await rt.service.wait(t, timeout=DEADLINE_S)  # Stop waits 5 s at most for the run's end to be written
        assert_pairing(await checkpointed(rt.service, t))
        await next_turn_answers(rt.service, fake_openai, t)


@pytest.mark.parametrize("then", ["new message", "continue", "reload"])
async def test_stop_while_an_approved_tool_runs(fake_openai, tmp_path, database_url, then):
    async with open_runtime(settings_for(tmp_path, database_url)) as rt:
        svc, t = rt.service, str(uuid.uuid4())
        await approve_slow_task(svc, t)
        assert await svc.stop(t, owner=OWNER)
        await svc.wait(t, timeout=20)  # Stop waits 5 s at most for the run's end to be written; the tool would take 30
        assert not await svc.is_running(t), "Stop did not stop the approved tool"
        view = await svc.load(t, owner=OWNER)
        [row] = cancelled_rows(view)
        assert row.tool_name == "slow_task" and row.outcome == "cancelled"  # Stop: neutral, not an error
        assert_pairing(await checkpointed(svc, t))
        # slow_task's wait is cancelled with the run (Stop really stops the tool), so nothing is
        # left running and the next step may start at once
        assert await TOOL_WORK.wait_idle(t, 1)
        if then == "new message":
            await next_turn_answers(svc, fake_openai, t)
        elif then == "continue":
            await svc.continue_run(t, owner=OWNER)
            await svc.wait(t)
            view = await svc.load(t, owner=OWNER)
            assert not fake_openai.refused and view.status == "idle"
            assert view.messages[-1].text.startswith("Done: Cancelled by the user")
            assert_pairing(await checkpointed(svc, t))
        else:
            async with open_runtime(settings_for(tmp_path, database_url)) as rt2:
                view = await rt2.service.load(t, owner=OWNER)
                assert len(cancelled_rows(view)) == 1
                await next_turn_answers(rt2.service, fake_openai, t)


async def test_stop_whose_cancel_write_failed_is_answered_on_reload(fake_openai, tmp_path, database_url, monkeypatch):
    """If writing the cancel message at Stop fails, the next path (here: reload) writes it."""
    real = run_driver.answer_open_calls

    async def broken(*args, **kwargs):
        raise OSError("database went away")

    monkeypatch.setattr(run_driver, "answer_open_calls", broken)
    async with open_runtime(settings_for(tmp_path, database_url)) as rt:
        svc, t = rt.service, str(uuid.uuid4())
        await approve_slow_task(svc, t)
        assert await svc.stop(t, owner=OWNER)
        monkeypatch.setattr(run_driver, "answer_open_calls", real)
        view = await svc.load(t, owner=OWNER)
        assert len(cancelled_rows(view)) == 1
        assert_pairing(await checkpointed(svc, t))
        assert await TOOL_WORK.wait_idle(t, 10)
        await next_turn_answers(svc, fake_openai, t)


_KILLED_RUN = textwrap.dedent(
    """
    import asyncio, sys
    from hitl_app.runtime import open_runtime
    from hitl_app.settings import Settings
    from hitl_app.desk.cards import BrowserPerson

    async def main(data_dir, url, thread_id):
        settings = Settings(HITL_DATA_DIR=data_dir, HITL_MODEL="demo", HITL_DEMO_WPS=0, DATABASE_URL=url)
        async with open_runtime(settings) as rt:
            await rt.service.start_turn(thread_id, "wait 20 seconds", owner="browser-1")
            await rt.service.wait(thread_id)
            view = await rt.service.load(thread_id, owner="browser-1")
            await rt.service.submit_review(
                thread_id, view.pending.interrupt_id, [{"type": "approve"}], person=BrowserPerson("browser-1", "ann")
            )
            await asyncio.sleep(1.0)
            print("TOOL RUNNING", flush=True)
            await asyncio.sleep(60)

    asyncio.run(main(*sys.argv[1:]))
    """
)


@pytest.mark.slow
async def test_killed_worker_then_a_turn(fake_openai, tmp_path, database_url):
    t = str(uuid.uuid4())
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_RUN, str(tmp_path), database_url, t],
        stdout=subprocess.PIPE, cwd=os.getcwd(), env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    try:
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 60)
        assert line.strip() == b"TOOL RUNNING"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    async with open_runtime(settings_for(tmp_path, database_url)) as rt:
        view = await rt.service.load(t, owner=OWNER)
        assert view.status == "incomplete", "a killed run can be continued"
        await next_turn_answers(rt.service, fake_openai, t)
        view = await rt.service.load(t, owner=OWNER)
        [row] = [m for m in view.messages if m.role == "tool" and "the server stopped" in m.text]
        assert row.outcome == "cancelled"  # the worker died: not an error of the tool


async def test_a_call_that_finished_after_stop_shows_its_result_and_the_model_reads_it(
    fake_openai, tmp_path, database_url,
):
    """A blocking tool Stop cannot interrupt (a sync tool in a worker thread) goes on and records
    its effect after the run was answered "Cancelled". Reload shows the call done with its real
    result, the audit gets its executed arguments back, and the next turn's model reads the result,
    never "Cancelled" for an action that happened (issue 19)."""
    async with open_runtime(settings_for(tmp_path, database_url)) as rt:
        svc, t = rt.service, str(uuid.uuid4())
        await approve_slow_task(svc, t)
        assert await svc.stop(t, owner=OWNER)
        await svc.wait(t, timeout=20)
        [row] = cancelled_rows(await svc.load(t, owner=OWNER))
        assert not (await svc.audit_for_thread(t))[row.tool_call_id].args_executed  # cleared at Stop
        # the blocking call finishes now, after the run ended, and records its effect as a tool does
        space = DemoWorkspace(files_dir=rt.settings.files_dir, engine=rt.engines.sync, demo_db_path=rt.settings.demo_db_path)
        await asyncio.to_thread(space.run_once, f"{t}:{row.tool_call_id}", "slow_task", lambda: "Waited 30 s", owner=OWNER)

        view = await svc.load(t, owner=OWNER)
        [done] = [m for m in view.messages if m.role == "tool"]
        assert (done.outcome, done.text) == ("executed", "Waited 30 s") and not cancelled_rows(view)
        assert (await svc.audit_for_thread(t))[row.tool_call_id].args_executed == {"seconds": 30}
        async with svc._session() as session:  # the restored arguments are a fact of the audit chain
            assert (await verify_database(session=session)).problems == ()
        await next_turn_answers(svc, fake_openai, t)
        answers = [m for m in fake_openai.requests[-1]["messages"] if m.get("role") == "tool"]
        assert [a["content"] for a in answers] == ["Waited 30 s"]
