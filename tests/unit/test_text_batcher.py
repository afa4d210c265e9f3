"""TextBatcher (threads/text_batcher.py): streamed tokens reach the tabs in 50 ms batches."""

from __future__ import annotations

import asyncio

from hitl_app.threads.text_batcher import FLUSH_INTERVAL_S, TextBatcher


class FakeClock:
    """A monotonic clock the test moves by hand, counted in whole milliseconds (no float drift)."""

    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> float:
        return self.ms / 1000

    def advance(self, seconds: float) -> None:
        self.ms += round(seconds * 1000)


def make() -> tuple[TextBatcher, list[str], FakeClock]:
    published: list[str] = []
    clock = FakeClock()
    return TextBatcher(published.append, clock=clock), published, clock


def test_the_interval_is_50_ms():
    assert FLUSH_INTERVAL_S == 0.05
    assert TextBatcher(lambda _: None).interval_s == 0.05


def test_the_first_token_goes_out_at_once_then_tokens_wait_for_the_interval():
    batcher, published, clock = make()
    batcher.append("Hel")
    assert published == ["Hel"]
    clock.advance(0.01)
    batcher.append("lo")
    clock.advance(0.02)
    batcher.append(" wor")
    assert published == ["Hel"] and batcher.pending == "lo wor"
    clock.advance(0.02)  # 50 ms since the last publish
    batcher.append("ld")
    assert published == ["Hel", "lo world"] and batcher.pending == ""


def test_flush_publishes_what_is_pending_and_never_an_empty_delta():
    batcher, published, clock = make()
    batcher.append("a")
    clock.advance(0.001)
    batcher.append("b")
    batcher.flush()
    batcher.flush()
    assert published == ["a", "b"]
    fresh, nothing, _ = make()
    fresh.flush()
    assert nothing == []


def test_flush_restarts_the_interval():
    batcher, published, clock = make()
    batcher.append("a")
    clock.advance(0.04)
    batcher.flush()  # nothing pending, but the interval restarts here
    clock.advance(0.03)
    batcher.append("b")
    assert published == ["a"] and batcher.pending == "b"


async def test_the_ticker_publishes_a_batch_left_pending_when_tokens_stop():
    batcher, published, clock = make()
    batcher.append("a")
    clock.advance(0.01)
    batcher.append("b")  # pending: the model paused mid-interval
    sleeps: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock.advance(seconds)
        if len(sleeps) == 3:
            raise asyncio.CancelledError

    try:
        await batcher.tick(sleep=fake_sleep)
    except asyncio.CancelledError:
        pass
    assert sleeps == [0.05, 0.05, 0.05]
    assert published == ["a", "b"]
    assert not batcher.due()
