"""A raised review's rows are read once for every tab (``ReviewReads``), and only while shared."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from hitl_app.review.types import ActionRequest, PendingReview, ReviewConfig
from hitl_app.threads import review_reads
from hitl_app.threads.review_reads import ReviewReads

TID = "0b6c5d1e-9f7a-4c2b-8e3d-1a2b3c4d5e6f"


def _review(interrupt_id: str = "i-1") -> PendingReview:
    return PendingReview(
        thread_id=TID, interrupt_id=interrupt_id,
        action_requests=[ActionRequest(name="send_email", args={"to": "a@example.com"}, description="Send")],
        review_configs=[ReviewConfig(action_name="send_email", allowed_decisions=["approve", "reject"])],
    )


class Reads:
    """Counts each read; the owner recorded is ``recorded``."""

    def __init__(self, recorded: str = "7") -> None:
        self.recorded, self.calls = recorded, 0
        self.gate = asyncio.Event()

    def reads(self) -> ReviewReads:
        async def owner_of(thread_id: str) -> str:
            self.calls += 1
            await self.gate.wait()
            return self.recorded

        async def note_review(review: PendingReview) -> datetime:
            return datetime(2026, 1, 1, tzinfo=UTC)

        async def cards_now(review: PendingReview, owner: str):
            return [f"card for {owner}"], {}

        async def desk_rows(review: PendingReview, owner: str):
            return None, None, "Dana", {}

        return ReviewReads(owner_of, note_review, cards_now, desk_rows)


async def test_every_tab_shares_the_one_read_the_run_started():
    fake = Reads()
    reads = fake.reads()
    review = _review()
    reads.start(review, "7")
    tabs = [asyncio.ensure_future(reads.shared(review)) for _ in range(3)]
    reads.start(review, "7")  # a second start while it reads: the same read
    fake.gate.set()
    rows = await asyncio.gather(*tabs)
    assert fake.calls == 1
    assert all(r is not None and r.owner == "7" and r.cards == ["card for 7"] and r.rows[2] == "Dana" for r in rows)


async def test_no_shared_rows_without_a_read_or_for_another_owner():
    fake = Reads(recorded="8")
    reads = fake.reads()
    assert await reads.shared(_review()) is None  # no run started one: the tab reads for itself
    fake.gate.set()
    reads.start(_review("i-2"), "7")
    assert await reads.shared(_review("i-2")) is None  # the recorded owner is not the run's


async def test_a_later_load_reads_afresh(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(review_reads, "KEEP_S", 0.01)
    fake = Reads()
    fake.gate.set()
    reads = fake.reads()
    await reads.start(_review(), "7")
    for _ in range(200):
        if not len(reads):
            break
        await asyncio.sleep(0.01)
    assert len(reads) == 0
    assert await reads.shared(_review()) is None
