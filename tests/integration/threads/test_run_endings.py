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
import uuid

import pytest

from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings
from hitl_app.threads import run_driver
from hitl_app.threads.decide import BrowserPerson
from hitl_app.threads.tool_work import TOOL_WORK
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


async def approve_slow_task(service, thread_id, seconds=6) -> None:
    """``wait N seconds``, approve the card, return while the tool runs."""
    await service.start_turn(thread_id, f"wait {seconds} seconds", owner=OWNER)
    await service.wait(thread_id)
    view = await service.load(thread_id, owner=OWNER)
    assert view.pending is not None and view.pending.action_requests[0].name == "slow_task"
    await service.submit_review(thread_id, view.pending.interrupt_id, [{"type": "approve"}], person=BrowserPerson(OWNER, "ann"))
    await asyncio.sleep(1.0)
    assert await service.is_running(thread_id)


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
        await rt.service.start_turn(t, "stream 300 words", owner=OWNER)
        await asyncio.sleep(0.6)
        assert await rt.service.stop(t, owner=OWNER)
        assert_pairing(await checkpointed(rt.service, t))
        await next_turn_answers(rt.service, fake_openai, t)


@pytest.mark.parametrize("then", ["new message", "continue", "reload"])
async def test_stop_while_an_approved_tool_runs(fake_openai, tmp_path, database_url, then):
    async with open_runtime(settings_for(tmp_path, database_url)) as rt:
        svc, t = rt.service, str(uuid.uuid4())
        await approve_slow_task(svc, t)
        assert await svc.stop(t, owner=OWNER)
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
    from hitl_app.threads.decide import BrowserPerson

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
