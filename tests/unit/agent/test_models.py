"""make_model: the start-up line for a missing key / unknown provider, and provider options."""

from __future__ import annotations

import pytest

from hitl_app.agent.models import ModelConfigError, make_model
from hitl_app.settings import Settings


def test_missing_openai_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelConfigError) as info:
        make_model(Settings(HITL_MODEL="openai:gpt-4o-mini"))
    assert "set OPENAI_API_KEY" in str(info.value) and "\n" not in str(info.value)


def test_unknown_provider_is_one_line(monkeypatch):
    with pytest.raises(ModelConfigError) as info:
        make_model(Settings(HITL_MODEL="nosuch:model"))
    assert str(info.value).startswith("HITL_MODEL='nosuch:model'") and "\n" not in str(info.value)


def test_bare_unknown_name_is_refused(monkeypatch):
    with pytest.raises(ModelConfigError, match="names no known provider"):
        make_model(Settings(HITL_MODEL="not-a-model"))


def test_openai_spec_uses_base_url_and_retries_from_env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    model = make_model(Settings(HITL_MODEL="openai:fake-model", HITL_MODEL_MAX_RETRIES=1))
    assert model.model_name == "fake-model"
    assert str(model.root_async_client.base_url).rstrip("/") == "http://127.0.0.1:9/v1"
    assert model.max_retries == 1


def test_ollama_needs_no_key():
    model = make_model(Settings(HITL_MODEL="ollama:llama3.1"))
    assert type(model).__name__ == "ChatOllama"
