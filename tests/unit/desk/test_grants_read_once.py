"""Grants are read once per reviewed call (issue 23): the graph's check (``GrantChecker``) that found
no grant for a call stands for the review that call raises, so ``InterruptGrants`` does not read
the grants again for it; a call nobody checked (a developer's agent, no ``GrantGate``) is read."""

from __future__ import annotations

from pathlib import Path

from hitl_app.agent.policy import PolicyRule
from hitl_app.desk.grant_check import GateChecks, GrantChecker, InterruptGrants
from hitl_app.review.types import PendingReview
from hitl_app.store.db import create_schema, make_engines

TID = "6f1c3e1a-5b2d-4c7e-9f00-1a2b3c4d5e6f"


def review(call_id: str | None) -> PendingReview:
    return PendingReview.model_validate({
        "thread_id": TID, "interrupt_id": f"i-{call_id}",
        "action_requests": [{"name": "send_email", "args": {"to": "a@example.com"}, "description": ""}],
        "review_configs": [{"action_name": "send_email", "allowed_decisions": ["approve", "reject"]}],
        "tool_call_ids": [call_id],
    })


class Sessions:
    """A session factory that counts the sessions asked for and refuses them (a read would fail)."""

    def __init__(self) -> None:
        self.opened = 0

    def __call__(self):
        self.opened += 1
        raise RuntimeError("no database in this test")


async def no_rights(review: PendingReview) -> dict:
    return {}


async def test_a_call_the_graph_found_uncovered_is_not_looked_up_again_as_its_review_arrives(tmp_path: Path) -> None:
    engines = make_engines(f"sqlite:///{tmp_path / 'app.sqlite'}")
    try:
        create_schema(engines)
        checker = GrantChecker(engines, [PolicyRule(tool="send_email", allowed_decisions=["approve", "reject"],
                                                    description="Send")])
        call = {"id": "call-gate-1", "name": "send_email", "args": {"to": "a@example.com"}}
        assert await checker(TID, "1", call) is None, "no grant in an empty database"
        sessions = Sessions()
        grants = InterruptGrants(session=sessions, grant_refusal=lambda tool: "", rights_for=no_rights)
        assert await grants(review("call-gate-1"), "1") is None
        assert sessions.opened == 0, "the graph's check of this very call stands: no second read"
        assert await grants(review("call-gate-1"), "1") is None
        assert sessions.opened == 1, "once: the same review raised again is looked up"
    finally:
        engines.sync.dispose()
        await engines.async_.dispose()


async def test_a_call_nobody_checked_is_looked_up() -> None:
    sessions = Sessions()
    grants = InterruptGrants(session=sessions, grant_refusal=lambda tool: "", rights_for=no_rights)
    assert await grants(review("call-never-checked"), "1") is None  # the failed read: people decide
    assert await grants(review(None), "1") is None
    assert sessions.opened == 2


def test_a_stale_gate_check_counts_for_nothing(monkeypatch) -> None:
    import hitl_app.desk.grant_check as grant_check

    checks = GateChecks()
    now = [100.0]
    monkeypatch.setattr(grant_check.time, "monotonic", lambda: now[0])
    checks.note(TID, "c1")
    now[0] += grant_check.GATE_CHECK_FRESH_S + 1
    assert not checks.take(TID, "c1") and len(checks) == 0
    checks.note(TID, "c2")
    assert not checks.take(TID, None) and not checks.take("other", "c2")
    assert checks.take(TID, "c2") and not checks.take(TID, "c2"), "taken once"
