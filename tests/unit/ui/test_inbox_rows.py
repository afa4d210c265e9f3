"""The inbox rows' text: waiting times by the server's clock and the one-line arguments."""

from __future__ import annotations

from hitl_app.ui.state.inbox import ARGS_CHARS, args_text, waited_text


def test_waited_text_in_short_words():
    # the card's words (assets/waited.js waitedLabel), so the inbox and the card agree (QA C6)
    assert waited_text(0) == "0 s"
    assert waited_text(53.9) == "53 s"
    assert waited_text(4 * 60 + 30) == "4 min"
    assert waited_text(2 * 3600) == "2 h 0 min"
    assert waited_text(2 * 3600 + 5 * 60) == "2 h 5 min"
    assert waited_text(26 * 3600) == "26 h 0 min"
    assert waited_text(3 * 86400) == "3 days"


def test_args_text_is_one_line_and_cut():
    assert args_text({"amount": 500, "to": "Bob"}) == "amount: 500 · to: Bob"
    assert args_text({"body": "line one\n\nline   two"}) == "body: line one line two"
    long = args_text({"body": "x" * 500})
    assert len(long) == ARGS_CHARS and long.endswith("…")
