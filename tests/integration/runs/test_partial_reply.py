"""What a reply had streamed when its run ended stays in the thread (issue 19; QA M3, M1).

Stop in the middle of ``stream 300 words`` keeps the words streamed so far, marked as stopped,
and the next message is answered after them; the time limit and a model error after some words
keep them too and say what ended the reply, and Retry asks the model again without them (the
demo model's ``fail after N words`` fails again, by design). Real demo agent, SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings
from tests.helpers.pairing import assert_pairing

OWNER = "browser-1"
pytestmark = pytest.mark.asyncio(loop_scope="module")


def settings_for(tmp_path, database_url, **extra) -> Settings:
    return Settings(HITL_DATA_DIR=tmp_path, HITL_MODEL="demo", DATABASE_URL=database_url, **extra)


async def streamed_words(svc, t: str, at_least: int) -> str:
    """Follow the run's text deltas until ``at_least`` words streamed; returns the text so far."""
    text = ""
    async for event in svc.subscribe(t):
        if event.kind == "text":
            text += event.delta or ""
            if len(text.split()) >= at_least:
                return text
        if event.kind == "ended":
            break
    raise AssertionError(f"the run ended after {len(text.split())} words")


async def test_stop_keeps_the_streamed_words_marked_as_stopped(tmp_path, database_url):
    async with open_runtime(settings_for(tmp_path, database_url, HITL_DEMO_WPS=40)) as rt:
        svc, t = rt.service, str(uuid.uuid4())
        await svc.start_turn(t, "stream 300 words", owner=OWNER)
        seen = await asyncio.wait_for(streamed_words(svc, t, 10), 30)
        assert await svc.stop(t, owner=OWNER)
        view = await svc.load(t, owner=OWNER)
        assert [m.role for m in view.messages] == ["user", "assistant"]
        kept = view.messages[-1]
        assert kept.cut == "stopped" and kept.text.startswith(seen.strip()), (kept.text[:80], seen[:80])
        assert 10 <= len(kept.text.split()) < 300
        assert view.status == "idle" and view.error is None
        await svc.start_turn(t, "stream 3 words", owner=OWNER)  # the thread goes on after the kept words
        await svc.wait(t)
        view = await svc.load(t, owner=OWNER)
        assert [(m.role, m.cut) for m in view.messages][-2:] == [("user", ""), ("assistant", "")]
        assert len(view.messages[-1].text.split()) == 3
        assert_pairing((await svc.graph.aget_state(svc.config(t))).values["messages"])


@pytest.mark.parametrize("ending", ["failed", "time_limit"])
async def test_an_error_or_the_time_limit_keeps_the_words_and_says_why(tmp_path, database_url, ending):
    extra = {"HITL_RUN_TIMEOUT_SECONDS": 2, "HITL_DEMO_WPS": 20} if ending == "time_limit" else {"HITL_DEMO_WPS": 0}
    async with open_runtime(settings_for(tmp_path, database_url, **extra)) as rt:
        svc, t = rt.service, str(uuid.uuid4())
        text = "fail after 5 words" if ending == "failed" else "stream 300 words"
        await svc.start_turn(t, text, owner=OWNER)
        await svc.wait(t)
        view = await svc.load(t, owner=OWNER)
        kept = view.messages[-1]
        assert kept.role == "assistant" and kept.cut == ending
        assert len(kept.text.split()) == 5 if ending == "failed" else 5 < len(kept.text.split()) < 300
        assert view.status == "failed" and view.error, "the thread says what ended the reply and offers Retry"
        if ending == "time_limit":
            assert "took longer than 2 seconds" in view.error
        # Retry asks the model again, without the cut-off words (it never reads them)
        await svc.continue_run(t, owner=OWNER)
        await svc.wait(t)
        messages = (await svc.graph.aget_state(svc.config(t))).values["messages"]
        assert sum(1 for m in messages if m.type == "ai") == 1, [m.type for m in messages]
        assert_pairing(messages)
