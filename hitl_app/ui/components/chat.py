"""The thread column: messages, the live streamed reply, notices, the review and the composer."""

# Tested by: tests/e2e/test_chat_flow.py, tests/e2e/test_streaming.py

from __future__ import annotations

import reflex as rx

from hitl_app.review.types import MAX_PASTE_CHARS
from hitl_app.ui import theme
from hitl_app.ui.components.approval_card import review_panel
from hitl_app.ui.components.desk import composer_status
from hitl_app.ui.components.message import message
from hitl_app.ui.components.message_list import message_list
from hitl_app.ui.state.chat import ChatState
from hitl_app.ui.state.composer import COMPOSER_ID
from hitl_app.ui.state.review import ReviewState

THREAD_SCROLL_ID = "thread-scroll"
"""The id of the thread page's scroll box (``pages/thread.py``): the message list, the live reply and the
review scroll in it as one (``assets/js/stick_to_bottom.js`` keeps it at its end while text streams)."""


def streaming_bubble() -> rx.Component:
    """The reply being streamed: plain text (markdown is rendered once the message settles).

    The text element is keyed by ``ChatState.live_key`` and filled by ``window.hitlLive``
    (``assets/js/live.js``) from append-only deltas, in block ``div``s so that layout stays with
    the last block; React renders it once, empty, per bubble, and never re-renders the text.
    "Thinking…" (or, while a tool runs, ``ChatState.running_label``: "Running slow_task…") is a CSS
    ``::before`` shown while it is empty (so it is not part of the bubble's text).
    """
    return rx.cond(
        ChatState.streaming,
        rx.box(
            rx.el.div(
                key=ChatState.live_key,
                custom_attrs={"data-live": ChatState.live_key,
                              "data-placeholder": rx.cond(ChatState.running_label != "", ChatState.running_label, "Thinking…")},
                style={"&:empty::before": {"content": "attr(data-placeholder)", "color": theme.MUTED}},
            ),
            custom_attrs={"data-testid": "streaming-message", "data-role": "assistant"},
            background=theme.BUBBLE_ASSISTANT_BG,
            padding="8px 14px",
            border_radius=theme.RADIUS,
            max_width="85%",
            align_self="flex-start",
            white_space="pre-wrap",
            style={"overflowWrap": "anywhere"},
        ),
    )


def notices() -> rx.Component:
    """Run errors (with Retry) and notices (with Continue)."""
    return rx.fragment(
        rx.cond(
            ChatState.run_error != "",
            rx.callout(
                rx.hstack(
                    rx.text(ChatState.run_error, data_testid="run-error-text"),
                    rx.cond(
                        ChatState.can_continue,
                        rx.button("Retry", size="1", on_click=ChatState.continue_run, data_testid="retry-button")
                    ),
                    align="center",
                    spacing="3",
                    wrap="wrap",
                ),
                icon="triangle-alert",
                color_scheme="red",
                width="100%",
                data_testid="run-error",
            ),
        ),
        rx.cond(
            (ChatState.notice != "") & (ChatState.run_error == ""),
            rx.callout(
                rx.hstack(
                    rx.text(ChatState.notice),
                    rx.cond(
                        ChatState.can_continue,
                        rx.button(
                            "Continue", size="1", variant="soft", on_click=ChatState.continue_run, data_testid="continue-button"
                        )
                    ),
                    align="center",
                    spacing="3",
                    wrap="wrap",
                ),
                icon="info",
                width="100%",
                data_testid="run-notice",
            ),
        ),
    )


def composer() -> rx.Component:
    """The message box: Enter sends, Shift+Enter adds a line; locked (with the reason) while busy.
    Someone else's thread (opened to decide its review) says only its owner writes to the agent
    there, then what is left for this person to decide (not "read-only": the cards may be theirs)."""
    return rx.cond(
        ChatState.read_only,
        rx.text(
            "Someone else's thread: you can't message the agent here. ",
            rx.cond(  # what is left for this reviewer: their cards, or whom the review waits for now
                ChatState.status == "review",
                rx.cond(
                    ReviewState.composer_line != "",
                    composer_status(ReviewState.composer_line), "You can decide the cards above that are yours to decide.",
                ),
                "Nothing here waits for you now.",  # the review is decided (QA: the old hint outlived the cards)
            ),
            size="2", color=theme.MUTED, data_testid="read-only-notice",
        ),
        _composer_form(),
    )


def _composer_form() -> rx.Component:
    return rx.vstack(
        rx.cond(
            ChatState.lock_reason != "",
            rx.text(
                # a pending review: the line says what is left for THIS person (their cards, or whom it waits for)
                rx.cond(
                    (ChatState.status == "review") & (ChatState.load_error == "") & ~ChatState.streaming
                    & (ReviewState.composer_line != ""),
                    composer_status(ReviewState.composer_line), rx.el.span(ChatState.lock_reason),
                ),
                size="2", color=theme.MUTED, data_testid="composer-lock-reason",
            )
        ),
        rx.form(
            rx.hstack(
                rx.text_area(
                    name="text",
                    placeholder="Message the agent…  (Enter sends, Shift+Enter: new line)",
                    enter_key_submit=True,
                    auto_height=True,
                    rows="1",
                    max_length=MAX_PASTE_CHARS,
                    disabled=ChatState.composer_locked,
                    width="100%",
                    id=COMPOSER_ID,
                    data_testid="composer-input",
                    style={"maxHeight": "200px"},
                ),
                rx.cond(
                    ChatState.streaming,
                    rx.button(
                        rx.icon("square", size=14), "Stop", type="button", color_scheme="red", variant="soft",
                        on_click=ChatState.stop, data_testid="stop-button"
                    ),
                    rx.button(
                        rx.icon("send", size=14), "Send", type="submit", disabled=ChatState.composer_locked,
                        data_testid="send-button"
                    ),
                ),
                width="100%",
                align="end",
            ),
            on_submit=ChatState.send,
            # cleared by ChatState.send once the message is accepted: a refused one stays to fix
            reset_on_submit=False,
            width="100%",
        ),
        rx.cond(
            ChatState.composer_error != "",
            rx.text(ChatState.composer_error, color=theme.ERROR_COLOR, size="2", data_testid="composer-error")
        ),
        width="100%",
        spacing="1",
    )


def _messages() -> rx.Component:
    """The thread's rows: a virtualized list that asks for the earlier page as the reader scrolls up to its
    first row (and for the later one as they scroll down to its last, once the tab's window left the end),
    with "Show earlier messages" above it and "Show later messages" below it while such rows are still on
    the server."""
    return rx.fragment(
        rx.cond(
            ChatState.hidden_count > 0,
            rx.button(
                rx.icon("chevrons-up", size=14), "Show earlier messages (", ChatState.hidden_count, " more)",
                variant="soft", size="1", align_self="center", on_click=ChatState.show_earlier, data_testid="show-earlier",
            ),
        ),
        message_list(
            rx.foreach(ChatState.messages, message), ChatState.hidden_count, THREAD_SCROLL_ID, gap=12,
            later_count=ChatState.later_count, on_start_reached=ChatState.show_earlier,
            on_end_reached=ChatState.show_later, key=ChatState.tid,
        ),
        rx.cond(
            ChatState.later_count > 0,
            rx.button(
                rx.icon("chevrons-down", size=14), "Show later messages (", ChatState.later_count, " more)",
                variant="soft", size="1", align_self="center", on_click=ChatState.show_later, data_testid="show-later",
            ),
        ),
    )


def thread_column() -> rx.Component:
    """Messages, stream, notices, review and composer, in reading order.

    On mount it calls ``window.hitlStickToBottom`` (``assets/js/stick_to_bottom.js``): the thread
    stays scrolled to its end while text streams in, unless the reader scrolled up, and a new
    review is scrolled into view.
    """
    return rx.vstack(
        rx.cond(
            ChatState.load_error != "",
            rx.callout.root(
                rx.callout.icon(rx.icon("ban")),
                rx.callout.text(ChatState.load_error),
                rx.cond(
                    ChatState.load_retry,
                    rx.button(rx.icon("rotate-cw", size=14), "Retry", size="1", variant="surface", width="fit-content",
                              on_click=ChatState.retry_load, data_testid="load-retry"),
                ),
                color_scheme="red", width="100%", data_testid="load-error",
            ),
        ),
        rx.cond(
            (ChatState.messages.length() == 0) & ~ChatState.streaming & (ChatState.load_error == ""),
            rx.box(
                rx.heading("Talk to the agent; you decide what it does.", size="4"),
                rx.text(
                    "Actions that need a human (sending mail, deleting files, writing data) pause for your review.",
                    color=theme.MUTED,
                    size="2",
                ),
                rx.text("Try: ", rx.code("email alice@example.com about the report: it is ready"), size="2"),
                padding="24px 0",
                data_testid="empty-thread",
            ),
        ),
        _messages(),
        streaming_bubble(),
        notices(),
        review_panel(),
        spacing="3",
        width="100%",
        align="stretch",
        data_testid="thread",
        on_mount=rx.call_script("hitlStickToBottom()"),  # assets/js/stick_to_bottom.js
    )
