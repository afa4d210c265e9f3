"""The benchmark's tables say, under each target not met, what stands in the way and what was tried
(issue 23: "met or with the measurement that stands in the way and what was tried")."""

from __future__ import annotations

from bench import not_met
from bench.report import render_table
from bench.scale_report import render as render_scale


def _missed_run() -> dict:
    """A section 3 and 6 result that misses the card, submit, CPU and long-thread targets."""
    s = lambda m, p=None: {"median": m, "p95": p if p is not None else m}  # noqa: E731
    return {
        "config": {"n_main": 2000, "wps": 100},
        "floor": {"main": {"total_s": s(20.0)}},
        "browser": {
            "send_to_complete_ms": s(20100), "lag_ms": s(2, 5), "main_thread_ms_per_token": s(2.5),
            "main_thread_cpu_ms_per_token": s(2.5), "floor_page": {"main_thread_cpu_ms_per_token": 1.5},
            "send_to_first_token_ms": s(80, 100), "submit_to_first_resumed_token_ms": s(110, 130),
            "interrupt_to_card_ms": s(98, 122), "desk_off": {"interrupt_to_card_ms": s(65, 92)},
        },
        "long_thread": {"10000": {"interactive_ms": s(1261), "reopened_interactive_ms": s(389), "elements": s(280),
                                  "scroll_reached_first": True, "scroll_long_tasks": s(9), "scroll_longest_task_ms": s(81),
                                  "scroll_ms": s(7800)}},
    }


def test_every_target_missed_in_the_streaming_table_gets_its_note_and_a_met_one_none():
    table = render_table(_missed_run())
    notes = table.split("Targets not met:", 1)[1]
    for row in ("interrupt (model tool call) -> card", "submit -> first resumed token", "page/floor main-thread CPU",
                "navigation -> interactive", "scrolling to the top: long tasks", "card with the desk / desk off"):
        assert f"{row}" in notes, f"no note under the table for {row!r}"
    assert "no note yet" not in notes, notes
    assert "Stands in the way" in notes and "Tried" in notes
    assert "per-token lag" not in notes, "a met target gets no note"
    assert "send -> first token" not in notes


def test_a_run_that_meets_every_target_prints_no_notes():
    run = {"config": {"n_main": 10, "wps": 100}, "burst": {"n_words": 10, "send_to_complete_ms": {"median": 100, "p95": 100},
                                                          "longest_task_ms": {"median": 10, "p95": 10}}}
    assert "Targets not met" not in render_table(run)


def test_a_row_without_a_note_says_so_instead_of_passing_silently():
    assert not_met.notes_for([("9 new", "a new row")]) == ["- 9 new / a new row: no note yet (bench/not_met.py)"]


def test_the_scale_table_notes_its_cpu_target_when_missed():
    row = {"sessions": 50, "n_words": 200, "wps": 20, "lag_ms": {"p50": 3, "p95": 20, "max": 40}, "errors": 0, "connected": 50,
           "cpu_s_per_1k_tokens": 2.2, "wall_s": 30, "client_cpu_share": 0.4,
           "memory_peak": {"processes": [{"role": "worker", "pss_mb": 120}], "total_pss_mb": 400},
           "redis_peak": {}, "tabs_per_worker": {"1": 17}, "load_1m": [1.0, 1.0]}
    out = render_scale({"sessions_50": row, "machine": {"load_at_start": [0.5]}, "git": "x", "workers": 3})
    assert "Targets not met" in out and "py-spy" in out, out
