"""The app on a real provider client (langchain-openai) talking to the fake OpenAI server, in Chromium."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_chat_flow import open_new_thread, send
from tests.helpers.app_server import AppServer
from tests.helpers.fake_openai import FakeOpenAI


@pytest.fixture(scope="module")
def fake_openai() -> Iterator[FakeOpenAI]:
    """The fake provider, slow enough (0.15 s a chunk) for the stream to be seen."""
    server = FakeOpenAI(delay=0.15).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def openai_app(tmp_path_factory: pytest.TempPathFactory, fake_openai: FakeOpenAI) -> Iterator[AppServer]:
    """The app with ``HITL_MODEL=openai:fake-model`` pointed at the fake server (no client retries)."""
    env = {
        "HITL_MODEL": "openai:fake-model",
        "OPENAI_BASE_URL": fake_openai.url,
        "OPENAI_API_KEY": "test",
        "HITL_MODEL_MAX_RETRIES": "0",
    }
    server = AppServer(tmp_path_factory.mktemp("openai-app"), env=env)
    server.start()
    yield server
    server.stop()


def test_openai_model_streams_pauses_and_finishes_after_approve(page: Page, openai_app: AppServer, fake_openai: FakeOpenAI):
    open_new_thread(page, openai_app)
    send(page, "email carol@example.com about the launch: it moved to Friday")
    streaming = page.get_by_test_id("streaming-message")
    expect(streaming).to_contain_text("I will email")
    card = page.get_by_test_id("approval-card")
    expect(card).to_have_attribute("data-action-name", "send_email")
    expect(page.locator("[data-testid=card-arg][data-key=to]")).to_contain_text("carol@example.com")
    page.get_by_test_id("decision-approve").click()
    page.get_by_test_id("submit-decisions").click()
    expect(page.locator("[data-testid=message][data-role=tool]")).to_have_attribute("data-outcome", "executed")
    expect(page.locator("[data-testid=message][data-role=assistant]").last).to_contain_text("Done:")
    expect(page.get_by_test_id("composer-input")).to_be_enabled()
    assert fake_openai.requests[-1]["messages"][-1]["role"] == "tool"


def test_rate_limit_shows_retry_and_thread_recovers(page: Page, openai_app: AppServer, fake_openai: FakeOpenAI):
    open_new_thread(page, openai_app)
    fake_openai.fail_next("429")
    send(page, "hello provider")
    expect(page.get_by_test_id("run-error")).to_contain_text("rate-limiting")
    page.get_by_test_id("retry-button").click()
    expect(page.locator("[data-testid=message][data-role=assistant]").last).to_contain_text("You said: hello provider")
    expect(page.get_by_test_id("run-error")).to_have_count(0)
    send(page, "and again")
    expect(page.locator("[data-testid=message][data-role=assistant]").last).to_contain_text("You said: and again")


def test_missing_api_key_stops_startup_with_one_line(tmp_path):
    server = AppServer(tmp_path / "app", env={"HITL_MODEL": "openai:gpt-4o-mini", "OPENAI_API_KEY": ""})
    with pytest.raises(RuntimeError):
        server.start(timeout=90)
    lines = [line for line in server.log_path.read_text(errors="replace").splitlines() if "hitl_app cannot start" in line]
    assert len(lines) >= 1 and "set OPENAI_API_KEY" in lines[0]
