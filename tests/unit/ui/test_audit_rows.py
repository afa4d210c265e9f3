"""The audit page's rows: the wait reads as in the chat ("14 s", "1 min"), not raw seconds."""

from __future__ import annotations

from hitl_app.store.audit import AuditRow
from hitl_app.ui.state.audit import shown_rows


def _row(waited: float) -> AuditRow:
    return AuditRow(
        thread_id="t", thread_title="pay", interrupt_id="i", action_index=0, tool_call_id="c", tool_name="transfer_funds",
        decision_type="approve", args_proposed="{}", args_executed="{}", message="", reviewer="Rex",
        requested_at="2026-12-01T15:00:00+00:00", decided_at="2026-12-01T15:00:14+00:00", waited_seconds=waited,
        checkpoint_id="",
    )


def test_the_wait_is_shown_as_the_chat_says_it():
    assert [r.waited for r in shown_rows([_row(13.625), _row(72.335), _row(7300.0)])] == ["14 s", "1 min", "2.0 h"]


def test_the_exports_keep_the_exact_seconds():
    [row] = shown_rows([_row(13.625)])
    assert row.waited_seconds == 13.625
