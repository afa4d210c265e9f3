"""The one reader of HumanInTheLoopMiddleware's tool messages, fed by the REAL middleware.

Every message here is built by langchain's own code (``_answer_message`` for reject/respond, the
middleware's ``_prepend_notice`` for an edit, its ``_EDIT_NOTICE`` default). If a LangChain upgrade
changes the wording or the metadata, these tests fail and ``hitl_app/review/tool_messages.py`` is
the one place to fix.
"""

from __future__ import annotations

import pytest
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.agents.middleware import human_in_the_loop as hitl
from langchain_core.messages import ToolMessage

from hitl_app.review.tool_messages import (
    EDIT_NOTICE,
    GUARD_SOURCE,
    HITL_SOURCE,
    Edited,
    Plain,
    Rejected,
    Responded,
    Stopped,
    parse_tool_message,
    read_tool_message,
)

CALL = {"name": "send_email", "args": {"to": "bob@example.com"}, "id": "call_1", "type": "tool_call"}


def edited_message(content, args: dict, status: str = "success") -> ToolMessage:
    """What the middleware hands the model after a reviewer's edit (its own formatting code)."""
    middleware = HumanInTheLoopMiddleware(interrupt_on={"send_email": True})
    raw = ToolMessage(content=content, name="send_email", tool_call_id="call_1", status=status)
    return middleware._prepend_notice(raw, {"name": "send_email", "args": args})


def test_the_conventions_match_the_installed_middleware():
    assert EDIT_NOTICE == hitl._EDIT_NOTICE
    message = hitl._answer_message(CALL, {"type": "reject"})
    assert message.additional_kwargs["lc_source"] == HITL_SOURCE


def test_reject_with_a_reason_gives_the_reason_back():
    message = hitl._answer_message(CALL, {"type": "reject", "message": "not bob: use carol"})
    reading = read_tool_message(message)
    assert reading == Rejected(text=message.text, reason="not bob: use carol")


def test_reject_without_a_reason_says_it_did_not_run():
    reading = read_tool_message(hitl._answer_message(CALL, {"type": "reject"}))
    assert isinstance(reading, Rejected) and reading.reason is None
    assert "not executed" in reading.text


def test_respond_is_the_reviewers_answer_verbatim():
    message = hitl._answer_message(CALL, {"type": "respond", "message": "blue, with a: colon"})
    assert read_tool_message(message) == Responded(answer="blue, with a: colon")


def test_edit_names_the_call_that_ran_and_keeps_the_tool_output():
    edited = {"to": "carol@example.com", "subject": "lunch {ok}"}
    reading = read_tool_message(edited_message("Email sent to carol@example.com.", edited))
    assert isinstance(reading, Edited)
    assert (reading.name, reading.args, reading.result, reading.failed) == (
        "send_email", edited, "Email sent to carol@example.com.", False,
    )
    assert reading.text.startswith("Note: a human reviewer replaced this tool call")  # said plainly to the model


@pytest.mark.parametrize(
    ("content", "result"),
    [("", ""), ([{"type": "text", "text": "R1"}], "R1"), ("line 1\n\nTool response: inside", "line 1\n\nTool response: inside")],
)
def test_edit_with_empty_block_or_tricky_output(content, result):
    reading = read_tool_message(edited_message(content, {"to": "a@example.com"}))
    assert isinstance(reading, Edited) and reading.result == result and reading.args == {"to": "a@example.com"}


def test_an_edited_call_that_failed_is_still_an_edit():
    reading = read_tool_message(edited_message("Error: bad address", {"to": "x"}, status="error"))
    assert isinstance(reading, Edited) and reading.failed and reading.result == "Error: bad address"


def test_a_tool_output_quoting_the_notice_is_not_an_edit():
    text = 'row: "Executed instead: delete_file with arguments {"path": "x"}."'
    assert parse_tool_message(text) == Plain(text=text, failed=False)


def test_guard_messages_and_plain_results():
    guard = ToolMessage("Not executed: ...", tool_call_id="c", status="error", additional_kwargs={"lc_source": GUARD_SOURCE})
    assert read_tool_message(guard) == Stopped(text="Not executed: ...")
    assert read_tool_message(ToolMessage("boom", tool_call_id="c", status="error")) == Plain(text="boom", failed=True)
    assert parse_tool_message("ok", {"lc_source": HITL_SOURCE, "lc_data": "junk"}) == Plain(text="ok", failed=False)
