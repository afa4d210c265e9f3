"""TextBatcher (runs/text_batcher.py): a token after a quiet gap goes out at once; a burst is
coalesced into one delta per gap, flushed by a timer exactly when the gap ends."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from hitl_app.runs.text_batcher import FLUSH_INTERVAL_S, TextBatcher


class FakeClock:
    """A monotonic clock the test moves by hand, counted in whole milliseconds (no float drift)."""

    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> float:
        return self.ms / 1000

    def advance(self, seconds: float) -> None:
        self.ms += round(seconds * 1000)


class FakeTimers:
    """``call_later`` on the fake clock: ``run_due`` fires the timers whose time has come."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.timers: list[FakeTimers.Handle] = []

    class Handle:
        def __init__(self, at_ms: int, callback: Callable[[], None]) -> None:
            self.at_ms, self.callback, self.cancelled = at_ms, callback, False

        def cancel(self) -> None:
            self.cancelled = True

    def __call__(self, delay_s: float, callback: Callable[[], None]) -> FakeTimers.Handle:
        handle = FakeTimers.Handle(self.clock.ms + round(delay_s * 1000), callback)
        self.timers.append(handle)
        return handle

    @property
    def live(self) -> list[FakeTimers.Handle]:
        return [t for t in self.timers if not t.cancelled]

    def advance(self, seconds: float) -> None:
        """Move the clock, firing each live timer at its time (in order)."""
        end = self.clock.ms + round(seconds * 1000)
        while True:
            due = sorted((t for t in self.live if t.at_ms <= end), key=lambda t: t.at_ms)
            if not due:
                break
            t = due[0]
            t.cancelled = True
            self.clock.ms = max(self.clock.ms, t.at_ms)
            t.callback()
        self.clock.ms = end


def make(gap_s: float = 0.016) -> tuple[TextBatcher, list[str], FakeTimers]:
    published: list[str] = []
    clock = FakeClock()
    timers = FakeTimers(clock)
    return TextBatcher(published.append, gap_s=gap_s, clock=clock, call_later=timers), published, timers


def test_the_default_gap_lets_a_model_at_100_tokens_a_second_through_token_by_token():
    assert FLUSH_INTERVAL_S < 0.01
    assert TextBatcher(lambda _: None).gap_s == FLUSH_INTERVAL_S
    batcher, published, timers = make(FLUSH_INTERVAL_S)
    for i in range(20):
        batcher.append(f"w{i} ")
        timers.advance(0.01)
    assert published == [f"w{i} " for i in range(20)]
    assert timers.timers == []  # nothing was ever held


def test_a_token_after_quiet_is_published_at_once():
    batcher, published, timers = make()
    batcher.append("Hel")
    assert published == ["Hel"]
    timers.advance(0.1)  # 100 ms of quiet
    batcher.append("lo")
    assert published == ["Hel", "lo"] and batcher.pending == "" and not batcher.scheduled


def test_tokens_faster_than_the_gap_are_coalesced_and_flushed_when_the_gap_ends():
    batcher, published, timers = make(0.016)
    batcher.append("a")  # at once
    timers.advance(0.004)
    batcher.append("b")
    timers.advance(0.004)
    batcher.append("c")
    assert published == ["a"] and batcher.pending == "bc" and batcher.scheduled
    assert len(timers.live) == 1  # one timer for everything held
    timers.advance(0.007)  # 15 ms after "a": still held
    assert published == ["a"]
    timers.advance(0.001)  # 16 ms after "a": the timer publishes both
    assert published == ["a", "bc"] and not batcher.scheduled


def test_a_burst_becomes_one_delta_per_gap():
    batcher, published, timers = make(0.016)
    for _ in range(100):  # 100 tokens in 100 ms
        batcher.append("x")
        timers.advance(0.001)
    batcher.flush()
    assert "".join(published) == "x" * 100
    assert 6 <= len(published) <= 8  # 100 ms / 16 ms, plus the first and the final flush


def test_flush_publishes_what_is_held_cancels_the_timer_and_never_sends_an_empty_delta():
    batcher, published, timers = make()
    batcher.append("a")
    timers.advance(0.001)
    batcher.append("b")
    batcher.flush()
    batcher.flush()
    assert published == ["a", "b"] and not timers.live
    timers.advance(0.1)
    assert published == ["a", "b"]
    fresh, nothing, _ = make()
    fresh.flush()
    batcher.append("")
    assert nothing == [] and published == ["a", "b"]


def test_the_gap_counts_from_the_last_publish():
    batcher, published, timers = make(0.016)
    batcher.append("a")
    timers.advance(0.010)
    batcher.flush()  # nothing held: no publish, the gap still counts from "a"
    timers.advance(0.010)  # 20 ms after "a"
    batcher.append("b")
    assert published == ["a", "b"]


def test_close_drops_the_timer_and_keeps_the_text():
    batcher, published, timers = make()
    batcher.append("a")
    batcher.append("b")
    batcher.close()
    timers.advance(0.1)
    assert published == ["a"] and batcher.pending == "b"


async def test_on_the_event_loop_held_text_is_published_by_the_loop_timer():
    published: list[str] = []
    batcher = TextBatcher(published.append, gap_s=0.005)
    batcher.append("a")
    batcher.append("b")
    assert published == ["a"]
    await asyncio.sleep(0.05)
    assert published == ["a", "b"]
