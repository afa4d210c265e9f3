"""The rows the thread service hands out (its refusal, ``ThreadError``, lives in ``hitl_app/errors.py``).

``ThreadSummary`` (a sidebar row) and ``AuditEntry`` (a decision under its tool call) are plain
dataclasses declared next to their queries in ``store/`` and re-exported here, so the UI imports
them from the thread room.
"""

# Tested by: tests/integration/threads/test_thread_service.py - the refusals the service raises

from __future__ import annotations

from hitl_app.store.reviews import AuditEntry
from hitl_app.store.threads import ThreadSummary

__all__ = ["AuditEntry", "ThreadSummary"]
