"""The thread service's own words: the refusal it raises, and the rows it hands out.

``ThreadSummary`` (a sidebar row) and ``AuditEntry`` (a decision under its tool call) are plain
dataclasses declared next to their queries in ``store/`` and re-exported here, so the UI imports
them from the thread room.
"""

# Tested by: tests/integration/threads/test_thread_service.py - the refusals the service raises

from __future__ import annotations

from typing import Literal

from hitl_app.store.reviews import AuditEntry
from hitl_app.store.threads import ThreadSummary

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
]
"""Why a request about a thread was refused (``ThreadError.code``).

``not_found``: not a thread address; ``forbidden``: another browser's thread; ``empty`` /
``too_large``: the message; ``busy``: a run is live; ``review_pending``: decide the review first;
``nothing_to_continue``: the last run finished; ``db_unavailable``: the database did not answer
(nothing was done); ``not_started``: decisions were taken but the run could not start (see the
message: the review is, or soon will be, answerable again); ``limited``: a rate limit;
``bad_request``: a value the page never offers (e.g. a metrics period); ``too_late``: the moment
passed (an undo window ended, a grant was revoked already).
"""


class ThreadError(Exception):
    """A request about a thread was refused; ``message`` says what to do instead, ``code`` why."""

    def __init__(self, message: str, code: ThreadErrorCode = "refused"):
        super().__init__(message)
        self.message = message
        self.code: ThreadErrorCode = code


__all__ = ["AuditEntry", "ThreadError", "ThreadErrorCode", "ThreadSummary"]
