"""Errors shared by every room (no imports from the rest of the app)."""

from __future__ import annotations

from typing import Literal


class StartupError(ValueError):
    """The app cannot start with this configuration.

    ``str(error)`` is one line (newlines and runs of spaces are collapsed) naming what to set or
    fix, e.g. ``HITL_MODEL='openai:gpt-4o' needs an API key: set OPENAI_API_KEY``. The server's
    lifespan prints it as ``hitl_app cannot start: <line>`` and exits instead of serving.
    """

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


ThreadErrorCode = Literal[
    "refused",
    "not_found",
    "forbidden",
    "empty",
    "too_large",
    "busy",
    "review_pending",
    "nothing_to_continue",
    "db_unavailable",
    "not_started",
    "limited",
    "bad_request",
    "too_late",
    "agent_unavailable",
]
"""Why a request about a thread was refused (``ThreadError.code``).

``not_found``: not a thread address; ``forbidden``: another browser's thread; ``empty`` /
``too_large``: the message; ``busy``: a run is live; ``review_pending``: decide the review first;
``nothing_to_continue``: the last run finished; ``db_unavailable``: the database did not answer
(nothing was done); ``not_started``: decisions were taken but the run could not start (see the
message: the review is, or soon will be, answerable again); ``limited``: a rate limit;
``bad_request``: a value the page never offers (e.g. a metrics period); ``too_late``: the moment
passed (an undo window ended, a grant was revoked already); ``agent_unavailable``: a deployed agent
(``HITL_AGENT_URL``) did not answer, or answered with a server error (nothing was done there).
"""


class ThreadError(Exception):
    """A request about a thread was refused; ``message`` says what to do instead, ``code`` why."""

    def __init__(self, message: str, code: ThreadErrorCode = "refused"):
        super().__init__(message)
        self.message = message
        self.code: ThreadErrorCode = code
