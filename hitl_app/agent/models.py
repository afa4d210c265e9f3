"""Choose the chat model from settings: the offline demo model or any ``init_chat_model`` spec.

Keys and base URLs come from the provider's own environment variables (``OPENAI_API_KEY``,
``OPENAI_BASE_URL`` - which also covers vLLM, llama.cpp server, LM Studio and other
OpenAI-compatible servers -, ``ANTHROPIC_API_KEY``, ``OLLAMA_HOST``). A missing key or an unknown
provider raises ``ModelConfigError`` at start-up, in one line that says what to set.
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from hitl_app.agent.demo import DemoChatModel
from hitl_app.errors import StartupError

REQUIRED_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "azure_openai": ("AZURE_OPENAI_API_KEY",),
    "google_genai": ("GOOGLE_API_KEY",),
    "mistralai": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
}
"""provider -> environment variables of which at least one must be set (providers not listed,
such as ``ollama``, need none)."""


class ModelConfigError(StartupError):
    """``HITL_MODEL`` cannot be turned into a chat model; the message says what to set."""


def _provider_of(spec: str) -> str:
    if ":" in spec:
        return spec.split(":", 1)[0].strip().lower()
    try:
        from langchain.chat_models.base import _attempt_infer_model_provider

        return (_attempt_infer_model_provider(spec) or "").lower()
    except Exception:  # noqa: BLE001 - private helper; fall back to "unknown"
        return ""


def make_model(settings: Any) -> BaseChatModel:
    """Return the chat model named by ``settings.model``.

    Args:
        settings: an object with ``model: str``, ``demo_words_per_second: float`` and optionally
            ``model_max_retries: int | None`` (``hitl_app.settings.Settings``).

    Returns:
        ``DemoChatModel(words_per_second=settings.demo_words_per_second)`` for ``"demo"``;
        otherwise ``langchain.chat_models.init_chat_model(spec)``, e.g. ``"openai:gpt-4o-mini"``
        (with ``max_retries`` when ``HITL_MODEL_MAX_RETRIES`` is set; the provider default otherwise).

    Raises:
        ModelConfigError: empty spec, unknown provider, missing provider package or missing API
            key, in one line naming ``HITL_MODEL`` and the variable to set.
    """
    spec = (getattr(settings, "model", "") or "").strip()
    if spec.lower() == "demo":
        return DemoChatModel(words_per_second=float(settings.demo_words_per_second))
    if not spec:
        raise ModelConfigError("HITL_MODEL is empty: set HITL_MODEL=demo or a spec like 'openai:gpt-4o-mini'.")
    from langchain.chat_models import init_chat_model

    provider = _provider_of(spec)
    if not provider:
        raise ModelConfigError(
            f"HITL_MODEL={spec!r} names no known provider: set HITL_MODEL=demo or '<provider>:<model>', "
            "e.g. 'openai:gpt-4o-mini', 'anthropic:claude-sonnet-4-5', 'ollama:llama3.1'."
        )
    keys = REQUIRED_KEYS.get(provider, ())
    if keys and not any(os.environ.get(k) for k in keys):
        raise ModelConfigError(
            f"HITL_MODEL={spec!r} needs an API key: set {' or '.join(keys)} "
            "(for a local OpenAI-compatible server also set OPENAI_BASE_URL; any non-empty key works there)."
        )
    kwargs: dict[str, Any] = {}
    retries = getattr(settings, "model_max_retries", None)
    if retries is not None:
        kwargs["max_retries"] = int(retries)
    try:
        return init_chat_model(spec, **kwargs)
    except ImportError as exc:
        raise ModelConfigError(
            f"HITL_MODEL={spec!r} needs a provider package that is not installed ({exc}); "
            "install it or set HITL_MODEL=demo."
        ) from exc
    except Exception as exc:  # noqa: BLE001 - providers raise various types for bad config
        reason = " ".join(str(exc).split())[:300].rstrip(". ")
        raise ModelConfigError(
            f"HITL_MODEL={spec!r} cannot be used: {reason}. Set HITL_MODEL=demo or a spec like "
            "'openai:gpt-4o-mini' (with its package and API key)."
        ) from exc
