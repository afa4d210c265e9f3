"""Reflex state, one module per concern.

``SessionState`` (session.py): the signed-in account (``require_principal``, checked first by
every handler; the thread owner is ``str(account_id)``) and the browser's old localStorage id.
``ThreadListState`` (thread_list.py): the sidebar.
``ChatState`` (chat.py): the open thread, its committed messages, the live streamed text and the
tab's watcher. ``ReviewState`` (review.py): the approval cards of the pending review, a sibling of
the chat state. live.py holds the append-only text calls and the one-watcher-per-tab registry.
Handlers call ``hitl_app.threads``; no graph or SQL logic here. Every handler argument comes from
the browser and is checked before use.
"""

from hitl_app.ui.state.chat import ChatState
from hitl_app.ui.state.composer import COMPOSER_ID
from hitl_app.ui.state.review import ReviewState
from hitl_app.ui.state.session import SessionState
from hitl_app.ui.state.thread_list import IndexState, ThreadListState

__all__ = ["COMPOSER_ID", "ChatState", "IndexState", "ReviewState", "SessionState", "ThreadListState"]
