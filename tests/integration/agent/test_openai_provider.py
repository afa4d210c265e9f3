"""A real provider client (langchain-openai) against the fake OpenAI-compatible server on loopback.

The app's own start-up path is used (``open_runtime`` with ``HITL_MODEL=openai:fake-model``,
``OPENAI_BASE_URL``), so what is tested is exactly what a deployment runs, minus the browser.
"""

from __future__ import annotations

import asyncio

import pytest
from sqlmodel import select

from hitl_app.desk.cards import BrowserPerson
from hitl_app.errors import StartupError
from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings
from hitl_app.store.tables import OutboxMail
from tests.helpers.fake_openai import FakeOpenAI

OWNER = "browser-1"

# langchain-openai caches one httpx async client per process (bound to the loop that first used
# it), like the one-loop server does; so every test of this module shares one event loop.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture
def fake_openai(monkeypatch):
    """The fake provider, with the environment the real client reads pointed at it."""
    server = FakeOpenAI(delay=0.005).start()
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    yield server
    server.stop()


@pytest.fixture
def settings(tmp_path, database_url):
    return Settings(HITL_DATA_DIR=tmp_path, HITL_MODEL="openai:fake-model", HITL_MODEL_MAX_RETRIES=0, DATABASE_URL=database_url)


async def collect(service, thread_id: str) -> list:
    """Every live event of the thread's current run."""
    return [e async for e in service.subscribe(thread_id)]


async def test_openai_client_streams_pauses_for_review_and_resumes(fake_openai, settings):
    tid = "6f1c1c7e-8a52-4f43-9a2b-0d6f2b0f9a11"
    async with open_runtime(settings) as rt:
        service = rt.service
        await service.start_turn(tid, "email bob@example.com about lunch: at noon", owner=OWNER)
        events = await asyncio.wait_for(collect(service, tid), 30)
        deltas = [e.delta for e in events if e.kind == "text" and e.delta and not e.reset]
        assert len(deltas) >= 2, f"expected several streamed deltas, got {deltas}"
        assert "".join(deltas).startswith("I will email bob@example.com")
        assert events[-1].kind == "ended" and events[-1].outcome == "interrupted"

        view = await service.load(tid, owner=OWNER)
        assert view.status == "review"
        [action] = view.pending.action_requests
        assert action.name == "send_email"
        assert action.args == {"to": "bob@example.com", "subject": "about lunch", "body": "at noon"}
        assert view.pending.review_configs[0].allowed_decisions == ("approve", "edit", "reject")

        await service.submit_review(tid, view.pending.interrupt_id, [{"type": "approve"}], person=BrowserPerson(OWNER, "ann"))
        await service.wait(tid)
        view = await service.load(tid, owner=OWNER)
        assert view.status == "idle"
        assert view.messages[-1].role == "assistant"
        assert view.messages[-1].text.startswith("Done:")
        with rt.engines.sync.connect() as conn:
            mails = conn.execute(select(OutboxMail.to)).all()
        assert [m[0] for m in mails] == ["bob@example.com"]
        # the provider really got the tool result back
        assert fake_openai.requests[-1]["messages"][-1]["role"] == "tool"


@pytest.mark.parametrize(
    ("kind", "words"),
    [("429", "rate-limiting"), ("500", "internal error (HTTP 500)"), ("drop", "dropped mid-reply")],
)
async def test_provider_error_is_shown_with_retry_and_thread_stays_usable(fake_openai, settings, kind, words):
    tid = "0b6f8c1e-2f7d-4b7e-8a0c-3e1d5f9b2c44"
    async with open_runtime(settings) as rt:
        service = rt.service
        fake_openai.fail_next(kind)
        await service.start_turn(tid, "hello there, how are you today my friend", owner=OWNER)
        events = await asyncio.wait_for(collect(service, tid), 30)
        ended = events[-1]
        assert ended.outcome == "failed"
        assert words in ended.error and "Retry" in ended.error and "\n" not in ended.error
        view = await service.load(tid, owner=OWNER)
        assert view.status == "failed" and words in (view.error or "")

        # the provider is healthy again: Retry (continue_run) answers the same message
        await service.continue_run(tid, owner=OWNER)
        await service.wait(tid)
        view = await service.load(tid, owner=OWNER)
        assert view.status == "idle"
        assert view.messages[-1].text == "You said: hello there, how are you today my friend"
        assert [m.role for m in view.messages] == ["user", "assistant"]
        # and a next message works
        await service.start_turn(tid, "second message", owner=OWNER)
        await service.wait(tid)
        view = await service.load(tid, owner=OWNER)
        assert view.messages[-1].text == "You said: second message"


@pytest.mark.asyncio(loop_scope="function")
async def test_missing_key_unknown_provider_stop_startup_in_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    async def start(model: str) -> str:
        with pytest.raises(StartupError) as info:
            async with open_runtime(Settings(HITL_DATA_DIR=tmp_path, HITL_MODEL=model)):
                pass
        return str(info.value)

    line = await (start("openai:gpt-4o-mini"))
    assert "OPENAI_API_KEY" in line and "\n" not in line
    line = await (start("anthropic:claude-sonnet-4-5"))
    assert "ANTHROPIC_API_KEY" in line and "\n" not in line
    line = await (start("nosuchprovider:model-x"))
    assert "HITL_MODEL='nosuchprovider:model-x'" in line and "\n" not in line
