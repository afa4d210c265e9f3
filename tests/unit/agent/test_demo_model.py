"""The demo model: phrases -> tool calls, streaming, and the post-result summaries."""

from __future__ import annotations

import time

import pytest
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.agents.middleware.human_in_the_loop import _answer_message
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from hitl_app.agent.demo import HELP_TEXT, DemoChatModel
from hitl_app.agent.demo.model import _Pace

TOOL_NAMES = ["send_email", "write_file", "delete_file", "execute_sql", "ask_user", "read_data", "slow_task",
              "transfer_funds"]


@pytest.fixture
def model():
    return DemoChatModel(words_per_second=0).bind_tools([{"name": n} for n in TOOL_NAMES])


def calls_for(model, text: str) -> list[tuple[str, dict]]:
    msg = model.invoke([HumanMessage(text)])
    return [(tc["name"], tc["args"]) for tc in msg.tool_calls]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "email alice@example.com about the report: see attached",
            [("send_email", {"to": "alice@example.com", "subject": "the report", "body": "see attached"})],
        ),
        ("Email bob@example.com", [("send_email", {"to": "bob@example.com", "subject": "(no subject)", "body": ""})]),
        (
            "email bob@example.com: hi there",
            [("send_email", {"to": "bob@example.com", "subject": "(no subject)", "body": "hi there"})]
        ),
        ("write drafts/Plan.md: Hello: World", [("write_file", {"path": "drafts/Plan.md", "content": "Hello: World"})]),
        ("DELETE notes/old.txt", [("delete_file", {"path": "notes/old.txt"})]),
        ("sql: SELECT * FROM records", [("execute_sql", {"query": "SELECT * FROM records"})]),
        ("ask me what colour the button should be?", [("ask_user", {"question": "what colour the button should be?"})]),
        ("read records", [("read_data", {"table": "records"})]),
        ("wait 5 seconds", [("slow_task", {"seconds": 5})]),
        ("pay 1500 to Bob", [("transfer_funds", {"amount": 1500, "to": "Bob"})]),
        ("Pay $2,500.75 to Acme Ltd.", [("transfer_funds", {"amount": 2500.75, "to": "Acme Ltd"})]),
        ("pay 10 to Bob and Alice", [("transfer_funds", {"amount": 10, "to": "Bob and Alice"})]),
    ],
)
def test_each_phrase_gives_the_right_tool_call(model, text, expected):
    assert calls_for(model, text) == expected


def test_joined_requests_become_parallel_calls_in_order(model):
    text = "email alice@example.com about a and email bob@example.com about b; delete notes/x.txt"
    msg = model.invoke([HumanMessage(text)])
    assert [(tc["name"], tc["args"].get("to") or tc["args"].get("path")) for tc in msg.tool_calls] == [
        ("send_email", "alice@example.com"),
        ("send_email", "bob@example.com"),
        ("delete_file", "notes/x.txt"),
    ]
    ids = [tc["id"] for tc in msg.tool_calls]
    assert len(set(ids)) == 3 and all(i.startswith("call_") and len(i) == 37 for i in ids)
    assert msg.text == "I'll send an email to alice@example.com, send an email to bob@example.com and delete notes/x.txt."


def test_and_inside_an_argument_does_not_split(model):
    assert calls_for(model, "email bob@example.com about salt and pepper") == [
        ("send_email", {"to": "bob@example.com", "subject": "salt and pepper", "body": ""})
    ]
    assert calls_for(model, "sql: SELECT 1; DROP TABLE records") == [
        ("execute_sql", {"query": "SELECT 1; DROP TABLE records"})
    ]


@pytest.mark.parametrize("text", ["pay 0 to Bob", "pay -5 to Bob", "pay 1e999 to Bob", "pay 5 to", "pay 1,50 to Bob",
                                  "pay Bob 5"])
def test_pay_needs_a_positive_amount_and_a_name(model, text):
    msg = model.invoke([HumanMessage(text)])
    assert msg.tool_calls == [] and msg.text == HELP_TEXT
    assert "pay <amount> to <name>" in HELP_TEXT


def test_pay_joins_with_other_requests_but_not_inside_a_subject(model):
    assert calls_for(model, "pay 5 to Bob and email bob@example.com about it") == [
        ("transfer_funds", {"amount": 5, "to": "Bob"}),
        ("send_email", {"to": "bob@example.com", "subject": "it", "body": ""}),
    ]
    assert calls_for(model, "email bob@example.com about salary and pay rise") == [
        ("send_email", {"to": "bob@example.com", "subject": "salary and pay rise", "body": ""})
    ]


def test_pay_intro_and_summaries(model):
    msg = model.invoke([HumanMessage("pay 1500 to Bob")])
    assert msg.text == "I'll pay 1500 to Bob."
    c = _call("transfer_funds", {"amount": 1500, "to": "Bob"}, "c1")
    done = ToolMessage("Paid 1,500.00 to Bob.", name="transfer_funds", tool_call_id="c1")
    assert _summary(model, [c], [done]) == "Paid 1500 to Bob."
    rejected = _answer_message(c, {"type": "reject", "message": "needs an invoice"})
    assert _summary(model, [c], [rejected]) == (
        "The payment of 1500 to Bob did not happen: the reviewer rejected it (reason: needs an invoice)."
    )


def test_tool_call_ids_are_fresh_each_call(model):
    a = model.invoke([HumanMessage("delete notes/x.txt")]).tool_calls[0]["id"]
    b = model.invoke([HumanMessage("delete notes/x.txt")]).tool_calls[0]["id"]
    assert a != b


def test_only_bound_tools_are_called():
    model = DemoChatModel(words_per_second=0).bind_tools([{"name": "delete_file"}])
    assert calls_for(model, "email a@example.com and delete notes/x.txt") == [("delete_file", {"path": "notes/x.txt"})]
    unbound = DemoChatModel(words_per_second=0)
    msg = unbound.invoke([HumanMessage("delete notes/x.txt")])
    assert msg.tool_calls == [] and msg.text == HELP_TEXT


def test_unknown_text_gets_help(model):
    msg = model.invoke([HumanMessage("hello there")])
    assert msg.tool_calls == [] and "delete <path>" in msg.text


def test_stream_n_words_gives_exactly_n_words_in_many_chunks(model):
    chunks = list(model.stream([HumanMessage("stream 40 words")]))
    text = "".join(c.text for c in chunks)
    assert len(text.split()) == 40
    assert sum(1 for c in chunks if c.text) == 40


def test_tool_calls_survive_streaming(model):
    full = None
    for chunk in model.stream([HumanMessage("delete notes/x.txt and read records")]):
        full = chunk if full is None else full + chunk
    assert [tc["name"] for tc in full.tool_calls] == ["delete_file", "read_data"]
    assert full.tool_calls[0]["args"] == {"path": "notes/x.txt"}


async def test_astream_is_paced_by_words_per_second():
    model = DemoChatModel(words_per_second=200)
    start = time.perf_counter()
    words = [c.text async for c in model.astream([HumanMessage("stream 20 words")])]
    elapsed = time.perf_counter() - start
    assert len("".join(words).split()) == 20
    assert elapsed >= 20 / 200 * 0.8


async def test_fail_after_n_words_streams_then_raises(model):
    seen = []
    with pytest.raises(RuntimeError, match="Demo model failure after 5 words"):
        async for chunk in model.astream([HumanMessage("fail after 5 words")]):
            seen.append(chunk.text)
    assert len("".join(seen).split()) == 5


def test_stream_is_capped(model):
    msg = model.invoke([HumanMessage("stream 50000 words")])
    assert len(msg.text.split()) == 20000


# ---- summaries from the real HITL ToolMessage shapes ------------------------------------------
def _call(name, args, cid):
    return {"name": name, "args": args, "id": cid, "type": "tool_call"}


def _summary(model, calls, tool_messages) -> str:
    msgs = [HumanMessage("x"), AIMessage(content="", tool_calls=calls), *tool_messages]
    out = model.invoke(msgs)
    assert out.tool_calls == [], "the model must end the turn after tool results"
    return out.text


def test_summary_done(model):
    c = _call("send_email", {"to": "alice@example.com", "subject": "the report", "body": ""}, "c1")
    tm = ToolMessage("Email sent", name="send_email", tool_call_id="c1")
    assert _summary(model, [c], [tm]) == "Sent the email to alice@example.com (subject: the report)."


def test_summary_edited_names_the_new_args(model):
    c = _call("send_email", {"to": "bob@example.com", "subject": "lunch", "body": "noon"}, "c1")
    executed = {"name": "send_email", "args": {"to": "carol@example.com", "subject": "lunch", "body": "noon"}}
    tm = HumanInTheLoopMiddleware(interrupt_on={})._prepend_notice(
        ToolMessage("Email sent to carol@example.com", name="send_email", tool_call_id="c1"), executed
    )
    text = _summary(model, [c], [tm])
    assert text.startswith("A reviewer edited the call before it ran: sent the email to carol@example.com")
    assert "bob@example.com" not in text


def test_summary_rejected_carries_reason(model):
    c = _call("delete_file", {"path": "notes/old.txt"}, "c1")
    tm = _answer_message(c, {"type": "reject", "message": "not now"})
    assert _summary(model, [c], [tm]) == (
        "The delete of notes/old.txt did not happen: the reviewer rejected it (reason: not now)."
    )


def test_summary_rejected_without_reason(model):
    c = _call("delete_file", {"path": "notes/old.txt"}, "c1")
    tm = _answer_message(c, {"type": "reject"})
    assert _summary(model, [c], [tm]) == "The delete of notes/old.txt did not happen: the reviewer rejected it."


def test_summary_answered(model):
    c = _call("ask_user", {"question": "colour?"}, "c1")
    tm = _answer_message(c, {"type": "respond", "message": "blue"})
    assert _summary(model, [c], [tm]) == "You answered: blue."


def test_summary_tool_error_is_not_called_a_rejection(model):
    c = _call("delete_file", {"path": "notes/none.txt"}, "c1")
    tm = ToolMessage("File not found: notes/none.txt", name="delete_file", tool_call_id="c1", status="error")
    text = _summary(model, [c], [tm])
    assert text == "delete_file failed: File not found: notes/none.txt."


def test_summary_one_sentence_per_call_in_call_order(model):
    a = _call("send_email", {"to": "alice@example.com", "subject": "a", "body": ""}, "c1")
    b = _call("send_email", {"to": "bob@example.com", "subject": "b", "body": ""}, "c2")
    tms = [_answer_message(b, {"type": "reject", "message": "no"}), ToolMessage("ok", name="send_email", tool_call_id="c1")]
    text = _summary(model, [a, b], tms)
    assert text.index("alice@example.com") < text.index("bob@example.com")
    assert "The email to bob@example.com did not happen" in text


def test_make_model_picks_demo_and_explains_bad_specs():
    from types import SimpleNamespace

    from hitl_app.agent.models import ModelConfigError, make_model

    demo = make_model(SimpleNamespace(model="demo", demo_words_per_second=7))
    assert isinstance(demo, DemoChatModel) and demo.words_per_second == 7
    with pytest.raises(ModelConfigError, match="HITL_MODEL='nosuch:model'.*Set HITL_MODEL=demo"):
        make_model(SimpleNamespace(model="nosuch:model", demo_words_per_second=7))


def test_summary_shows_user_text_literally_under_markdown():
    """Values the user typed are escaped: a link or HTML in a subject reads back as typed."""
    from hitl_app.agent.demo import summarize_tool_result

    call = {
        "name": "send_email", "id": "c9",
        "args": {"to": "a@example.com", "subject": "[x](javascript:alert(1)) <img src=x>", "body": ""}
    }
    text = summarize_tool_result(call, ToolMessage("Email sent.", name="send_email", tool_call_id="c9"))
    assert r"\[x\]\(javascript:alert\(1\)\) \<img src=x\>" in text


def test_summary_of_sql_write_has_one_final_period():
    from hitl_app.agent.demo import summarize_tool_result

    call = {"name": "execute_sql", "id": "c8", "args": {"query": "UPDATE records SET amount = 1 WHERE id = -1"}}
    text = summarize_tool_result(call, ToolMessage("0 rows affected.", name="execute_sql", tool_call_id="c8"))
    assert text.endswith("0 rows affected.") and not text.endswith("..")


@pytest.mark.parametrize(
    "query",
    [
        "SELECT 1 -- `` ![x](http://127.0.0.1:3610/ping?exfil=SECRET) ``",
        "SELECT '```' || '`' AS ticks",
        "`SELECT 1`",
        "SELECT 1;\n\n![x](http://127.0.0.1:3610/ping)",
    ],
)
def test_sql_in_a_summary_stays_inside_its_code_span(model, query):
    """User text cannot close the inline code span and be rendered as markdown (an image, a link)."""
    from markdown_it import MarkdownIt

    from hitl_app.agent.demo import code_span, summarize_tool_result

    call = {"name": "execute_sql", "id": "c7", "args": {"query": query}}
    sentence = summarize_tool_result(call, ToolMessage("0 rows affected.", name="execute_sql", tool_call_id="c7"))
    html = MarkdownIt("commonmark").render(sentence)
    assert "<img" not in html and "<a " not in html
    tokens = MarkdownIt("commonmark").parseInline(code_span(query))[0].children
    assert [(t.type, t.content) for t in tokens] == [("code_inline", " ".join(query.splitlines()))]
    intro = model.invoke([HumanMessage(f"sql: {query}")]).text
    assert "<img" not in MarkdownIt("commonmark").render(intro)


class _Clock:
    """A clock the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_pace_keeps_the_rate_when_each_wait_overshoots():
    # token k is due k/rate after the start: a late wake-up shortens the next wait, so 100 tokens
    # at 100/s end at 1.0 s however much each sleep overshot (a sleep per token would end at 1.3 s)
    clock = _Clock()
    pace = _Pace(100, clock)
    for _ in range(100):
        wait = pace.next_wait()
        clock.now += max(wait, 0) + 0.003  # every sleep overshoots by 3 ms
    assert clock.now - 100.0 == pytest.approx(1.0 + 0.003, abs=1e-9)


def test_pace_after_a_stall_sends_at_most_a_quarter_second_of_tokens_at_once():
    clock = _Clock()
    pace = _Pace(100, clock)
    assert pace.next_wait() == pytest.approx(0.01)
    clock.now += 5.0  # the process stalled for 5 s
    at_once = 0
    while pace.next_wait() <= 0:
        at_once += 1
    assert at_once == 25  # 0.25 s worth at 100/s, not the 500 missed


def test_unpaced_never_waits():
    pace = _Pace(0, _Clock())
    assert [pace.next_wait() for _ in range(3)] == [0.0, 0.0, 0.0]


def test_summary_says_the_policy_rejected_a_card_whose_sibling_s_deadline_passed(model):
    """Issue 23: a card without a deadline, rejected because card 3's deadline passed, is not "the reviewer rejected it"."""
    from hitl_app.review.desk_policy import policy_rejection

    c = _call("send_email", {"to": "a@example.com", "subject": "s", "body": "b"}, "c1")
    message = policy_rejection(tool="send_email", card=0, deadline_card=2, deadline_s=60)
    tm = _answer_message(c, {"type": "reject", "message": message})
    assert _summary(model, [c], [tm]).replace("\\", "") == (  # markdown-escaped parentheses
        "The email to a@example.com did not happen: rejected by the policy: the deadline of card 3 passed "
        "(1 min without a decision)."
    )
