"""Errors shared by every room (no imports from the rest of the app)."""

from __future__ import annotations


class StartupError(ValueError):
    """The app cannot start with this configuration.

    ``str(error)`` is one line (newlines and runs of spaces are collapsed) naming what to set or
    fix, e.g. ``HITL_MODEL='openai:gpt-4o' needs an API key: set OPENAI_API_KEY``. The server's
    lifespan prints it as ``hitl_app cannot start: <line>`` and exits instead of serving.
    """

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))
