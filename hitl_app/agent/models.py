"""Choose the chat model from settings: the offline demo model or any ``init_chat_model`` spec."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from hitl_app.agent.demo_model import DemoChatModel


class ModelConfigError(ValueError):
    """``HITL_MODEL`` cannot be turned into a chat model; the message says what to set."""


def make_model(settings: Any) -> BaseChatModel:
    """Return the chat model named by ``settings.model``.

    Args:
        settings: an object with ``model: str`` and ``demo_words_per_second: float``
            (``hitl_app.settings.Settings``).

    Returns:
        ``DemoChatModel(words_per_second=settings.demo_words_per_second)`` for ``"demo"``;
        otherwise ``langchain.chat_models.init_chat_model(spec)``, e.g. ``"openai:gpt-4o-mini"``.

    Raises:
        ModelConfigError: empty spec, unknown provider or missing provider package, in one line
            naming ``HITL_MODEL``.
    """
    spec = (getattr(settings, "model", "") or "").strip()
    if spec.lower() == "demo":
        return DemoChatModel(words_per_second=float(settings.demo_words_per_second))
    if not spec:
        raise ModelConfigError("HITL_MODEL is empty: set HITL_MODEL=demo or a spec like 'openai:gpt-4o-mini'.")
    from langchain.chat_models import init_chat_model

    try:
        return init_chat_model(spec)
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
