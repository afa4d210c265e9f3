"""C27 (QA, issue 20/22): a tool argument with a right-to-left override read as another file name on
the card, the inbox, the audit and the mails; written out, it cannot."""

from __future__ import annotations

from hitl_app.review.shown import shown_controls


def test_bidi_invisible_and_control_characters_are_written_out_and_line_breaks_stay():
    assert shown_controls("invoice \u202efdp.exe\u202c") == "invoice <U+202E>fdp.exe<U+202C>"
    assert shown_controls("a\u200bb\x1b[31mred\x07\x85") == "a<U+200B>b<U+001B>[31mred<U+0007><U+0085>"
    assert shown_controls("line one\n\tline two, naïve, 日本") == "line one\n\tline two, naïve, 日本"


def test_the_card_and_the_inbox_write_them_out_and_the_call_keeps_its_arguments():
    from hitl_app.review.types import ActionRequest, PendingReview, ReviewConfig
    from hitl_app.ui.cards.card_rows import card_rows
    from hitl_app.ui.state.inbox import args_text

    args = {"to": "a@example.com", "subject": "invoice \u202efdp.exe"}
    review = PendingReview(
        thread_id="t", interrupt_id="i",
        action_requests=(ActionRequest(name="send_email", args=args, description="Send invoice \u202efdp.exe"),),
        review_configs=(ReviewConfig(action_name="send_email", allowed_decisions=("approve", "reject")),),
    )
    [card] = card_rows(review)
    assert card.description == "Send invoice <U+202E>fdp.exe"
    assert [a.value for a in card.args] == ['"a@example.com"', '"invoice <U+202E>fdp.exe"']
    assert "<U+202E>" in args_text(args)
    assert review.action_requests[0].args["subject"] == "invoice \u202efdp.exe"  # what runs is not changed
