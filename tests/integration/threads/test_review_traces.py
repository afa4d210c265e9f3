"""Reviews and runs as OpenTelemetry spans (hitl_app/traces.py, runs/run_trace.py), with the SDK's
in-memory exporter, on real runs of the offline demo model: a review a person approves and one
whose deadline expires, each a span between the run that raised it and the run that resumed it; one
the app never resumes (the agent went on without it), whose span still ends, with its status; and
with tracing off, nothing recorded and no trace context kept."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from sqlmodel import Session, select

from hitl_app import traces
from hitl_app.auth.types import Principal, Role
from hitl_app.review.types import RejectDecision
from hitl_app.runs.agent_runtime import resume_command, thread_config
from hitl_app.runtime import open_runtime
from hitl_app.settings import Settings
from hitl_app.store.tables import ReviewRequestRecord

MIA = Principal(1, "Mia", Role.MEMBER, "mia@example.com")
POLICY = """
[tools.send_email]
allowed_decisions = ["approve", "edit", "reject"]

[tools.write_file]
allowed_decisions = ["approve", "reject"]
deadline = "2s"
"""


@pytest.fixture
def exporter():
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    traces.use_provider(provider)
    yield spans
    traces.use_provider(None)


@pytest.fixture
async def runtime(tmp_path: Path):
    (tmp_path / "p.toml").write_text(POLICY)
    settings = Settings(HITL_DATA_DIR=tmp_path, HITL_DEMO_WPS=0, DATABASE_URL=f"sqlite:///{tmp_path / 'hitl.sqlite'}",
                        HITL_POLICY=str(tmp_path / "p.toml"), HITL_SWEEP_SECONDS=60)
    async with open_runtime(settings) as rt:
        yield rt


async def ask(svc, text: str):
    t = str(uuid.uuid4())
    await svc.start_turn(t, text, owner=str(MIA.account_id))
    await svc.wait(t)
    return t, await svc.load(t, viewer=MIA)


def named(spans, name: str, thread_id: str):
    return [s for s in spans if s.name == name and s.attributes.get("hitl.thread_id") == thread_id]


def events(span) -> list[tuple[str, dict]]:
    return [(e.name, dict(e.attributes or {})) for e in span.events]


async def test_an_approved_review_is_a_span_between_its_two_runs(exporter, runtime):
    svc = runtime.service
    t, view = await ask(svc, "email bob@example.com about lunch: see you at noon")
    assert view.pending is not None
    await svc.submit_review(t, view.pending.interrupt_id, [{"type": "approve"}], person=MIA)
    await svc.wait(t)
    spans = exporter.get_finished_spans()
    first, second = sorted(named(spans, "hitl.run", t), key=lambda s: s.start_time)
    [review] = named(spans, "hitl.review", t)
    assert (first.attributes["hitl.run.kind"], first.attributes["hitl.run.outcome"]) == ("turn", "interrupted")
    assert (second.attributes["hitl.run.kind"], second.attributes["hitl.run.outcome"]) == ("resume", "finished")
    # one trace: the raising run -> the review -> the resuming run
    assert review.context.trace_id == first.context.trace_id == second.context.trace_id
    assert review.parent.span_id == first.context.span_id
    assert second.parent.span_id == review.context.span_id
    assert review.attributes["hitl.interrupt_id"] == view.pending.interrupt_id
    assert review.attributes["hitl.tools"] == "send_email"
    names = [n for n, _ in events(review)]
    assert names == ["review.raised", "review.decision", "review.resumed"]
    decision = events(review)[1][1]
    assert decision["hitl.decision.type"] == "approve"
    who = (decision["hitl.reviewer.id"], decision["hitl.reviewer.name"], decision["hitl.reviewer.role"])
    assert who == ("1", "Mia", "member")
    assert review.start_time <= review.events[1].timestamp <= review.end_time
    assert review.status.status_code is StatusCode.OK and review.attributes["hitl.review.outcome"] == "decided"


async def test_an_expired_review_names_the_expiry_and_the_policy_decision(exporter, runtime):
    svc = runtime.service
    t, view = await ask(svc, "write notes/a.txt: hello")
    assert view.desk is not None and view.desk.deadline_at is not None
    assert await svc.sweeper().sweep(view.desk.deadline_at + timedelta(seconds=1)) == 1
    await svc.wait(t)
    [review] = named(exporter.get_finished_spans(), "hitl.review", t)
    found = events(review)
    assert [n for n, _ in found] == ["review.raised", "review.decision", "review.expired", "review.resumed"]
    assert found[1][1]["hitl.decision.type"] == "reject"
    assert found[2][1]["hitl.outcome"] == "reject"
    assert review.status.status_code is StatusCode.ERROR and review.attributes["hitl.review.outcome"] == "expired"
    assert "deadline" in (review.status.description or "")


async def test_a_review_never_resumed_still_ends_its_span_with_a_status(exporter, runtime):
    svc = runtime.service
    t, view = await ask(svc, "write notes/b.txt: hello")
    assert view.pending is not None and view.desk is not None and view.desk.deadline_at is not None
    # the agent goes on without the app (as a deployed agent's run cancelled and restarted on its server would)
    reject = RejectDecision(type="reject", message="not through the app")
    async for _ in svc.graph.astream_events(resume_command(view.pending.interrupt_id, [reject]), thread_config(t),
                                            version="v2"):
        pass
    assert (await svc.load(t, viewer=MIA)).pending is None
    assert named(exporter.get_finished_spans(), "hitl.review", t) == []
    assert await svc.sweeper().sweep(view.desk.deadline_at + timedelta(seconds=1)) == 0  # nothing to expire: abandoned
    [review] = named(exporter.get_finished_spans(), "hitl.review", t)
    assert [n for n, _ in events(review)] == ["review.raised", "review.abandoned"]
    assert review.status.status_code is StatusCode.ERROR and review.attributes["hitl.review.outcome"] == "abandoned"
    assert "no longer waits" in (review.status.description or "")
    await svc.sweeper().sweep(view.desk.deadline_at + timedelta(seconds=5))  # looked at once: one span, not two
    assert len(named(exporter.get_finished_spans(), "hitl.review", t)) == 1


async def test_without_tracing_nothing_is_recorded_or_kept(tmp_path, runtime):
    assert not traces.enabled()
    t, view = await ask(runtime.service, "email bob@example.com about lunch: see you at noon")
    assert view.pending is not None
    with Session(runtime.engines.sync) as s:
        [row] = s.exec(select(ReviewRequestRecord).where(ReviewRequestRecord.thread_id == t)).all()
    assert row.trace_parent is None
    assert not traces.configure_from_env({"OTEL_SERVICE_NAME": "x"}), "no exporter asked for: no provider"
    assert traces.wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}) == "otlp"
    assert traces.wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}) is None
    assert traces.wanted({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}) is None
