"""Chat bubbles and compact, expandable tool rows."""

# Tested by: tests/e2e/test_chat_flow.py

from __future__ import annotations

import reflex as rx

from hitl_app.ui import theme
from hitl_app.ui.rows import MessageRow

LINK_REL = "noopener noreferrer nofollow"
"""``rel`` of links in assistant text: the opened page gets no handle on this tab, no referrer, and
no ranking credit."""



def _args_code(text: rx.Var) -> rx.Component:
    """Tool arguments as a JSON code block that wraps long values inside the bubble."""
    return rx.code_block(text, language="json", wrap_long_lines=True, custom_style=theme.ARGS_CODE_STYLE)

def _md_link(*children: rx.Component, **props) -> rx.Component:
    """A markdown link: opens in a new tab with ``LINK_REL``."""
    return rx.link(*children, rel=LINK_REL, target="_blank", underline="always", **props)


def _md_image(*_children: rx.Component, **_props) -> rx.Component:
    """A markdown image as a text link (``image: <alt text>``): model text must not make the browser
    fetch a URL by itself (a remote image URL can carry data out, e.g. ``?q=<secret>``)."""
    return rx.el.a(
        "image: ",
        rx.Var(_js_expr="(props.alt || props.src || '')", _var_type=str),
        href=rx.Var(_js_expr="props.src", _var_type=str),
        rel=LINK_REL,
        target="_blank",
        custom_attrs={"data-testid": "markdown-image-link"},
        style={"color": "var(--accent-11)", "textDecoration": "underline"},
    )


_MARKDOWN = {"p": lambda text: rx.text(text, margin_y="0.6em"), "a": _md_link, "img": _md_image}
"""Assistant markdown: paragraph spacing (Reflex's default is 1em above and below), links in a new
tab without referrer, images as text links (never loaded)."""
_NO_OUTER_MARGIN = {
    # the markdown sits in one wrapper <div>: its first and last blocks touch the padding
    "& > div > :first-child": {"marginTop": "0"},
    "& > div > :last-child": {"marginBottom": "0"},
}
"""The bubble's padding is the only space around its text: no paragraph margin at its edges."""


def _outcome_badge(outcome: rx.Var[str]) -> rx.Component:
    return rx.badge(
        outcome,
        color_scheme=rx.match(
            outcome,
            ("executed", "green"),
            ("edited", "blue"),
            ("rejected", "red"),
            ("answered", "violet"),
            ("error", "red"),
            "gray",
        ),
        variant="soft",
        data_testid="tool-outcome",
    )


def tool_row(msg: MessageRow) -> rx.Component:
    """A tool call's result: name + outcome on one line, arguments and result when expanded."""
    return rx.el.details(
        rx.el.summary(
            rx.hstack(
                rx.icon("wrench", size=14, color=theme.MUTED),
                rx.code(msg.tool_name, variant="ghost"),
                _outcome_badge(msg.outcome),
                rx.cond(
                    msg.audit != "", rx.text(msg.audit, size="1", color=theme.MUTED, data_testid="audit-line", style=theme.WRAP)
                ),
                spacing="2",
                align="center",
                wrap="wrap",
            ),
            style={"cursor": "pointer", "listStyle": "none"},
        ),
        rx.vstack(
            rx.cond(
                msg.proposed_json != "",
                rx.grid(
                    rx.box(rx.text("Proposed by the model", size="1", color=theme.MUTED),
                           _args_code(msg.proposed_json),
                           data_testid="tool-proposed-args", min_width="0"),
                    rx.box(rx.text("Ran with (edited by the reviewer)", size="1", color=theme.MUTED),
                           _args_code(msg.args_json),
                           data_testid="tool-ran-args", min_width="0"),
                    columns=rx.breakpoints(initial="1", sm="2"),
                    spacing="2",
                    width="100%",
                ),
                rx.cond(
                    msg.args_json != "",
                    rx.box(
                        rx.text("Arguments", size="1", color=theme.MUTED),
                        _args_code(msg.args_json), width="100%",
                    ),
                ),
            ),
            rx.text("Result", size="1", color=theme.MUTED),
            rx.box(rx.text(msg.result, size="2", white_space="pre-wrap", style={"wordBreak": "break-word"}), width="100%"),
            spacing="1",
            padding_top="6px",
            width="100%",
        ),
        custom_attrs={"data-testid": "message", "data-role": "tool", "data-outcome": msg.outcome},
        style={
            "border": "1px solid var(--gray-5)", "borderRadius": "8px", "padding": "6px 10px", "width": "100%",
            "background": "var(--gray-1)"
        },
    )


LONG_USER_CHARS = 1200
"""A user message longer than this (characters) is shown folded: its first lines and "Show the
whole message" (QA C9: a 5,000-character message filled the screen)."""

_FOLD = {
    "& .hitl-fold-preview": {"maxHeight": "9.5em", "overflow": "hidden",
                             "maskImage": "linear-gradient(to bottom, black 60%, transparent)"},
    "& > details > summary": {"cursor": "pointer", "width": "fit-content", "color": "var(--accent-11)"},
    "&:has(> details[open]) > .hitl-fold-preview, & > details[open] .hitl-fold-more,"
    " & > details:not([open]) .hitl-fold-less": {"display": "none"},
}


def _markdown(text: rx.Var[str]) -> rx.Component:
    """Message text as markdown, raw HTML off (shown as text, never run: no XSS); links open in a new
    tab, images are links (``_MARKDOWN``). The user's and the agent's words render alike."""
    return rx.markdown(text, use_raw=False, component_map=_MARKDOWN)


def _user_text(msg: MessageRow) -> rx.Component:
    """The user's words as markdown (like the agent's); a long message folded: its first lines, then a
    ``<details>`` (test id ``message-fold``) whose summary, "Show the whole message (N characters)", a
    click or the keyboard (Enter, Space) opens to the whole text, and "Show less" folds again. The
    preview stays outside the summary, so a link in it is never inside another control."""
    return rx.cond(
        msg.text.length() > LONG_USER_CHARS,
        rx.box(
            # inert: neither read out nor focusable (its links): the summary says what it is, opening shows it all
            rx.box(_markdown(msg.text), class_name="hitl-fold-preview", custom_attrs={"inert": True}),
            rx.el.details(
                rx.el.summary(
                    rx.text.span("Show the whole message (", msg.text.length().to_string(), " characters)",
                                 class_name="hitl-fold-more", size="2", weight="medium"),
                    rx.text.span("Show less", class_name="hitl-fold-less", size="2", weight="medium"),
                ),
                _markdown(msg.text),
                data_testid="message-fold",
            ),
            style=_FOLD,
        ),
        _markdown(msg.text),
    )


def bubble(msg: MessageRow) -> rx.Component:
    """A user or assistant message: markdown with raw HTML disabled (no XSS); a long user message folded."""
    is_user = msg.role == "user"
    return rx.box(
        rx.cond(is_user, _user_text(msg), _markdown(msg.text)),
        rx.cond(msg.cut != "", rx.text(msg.cut, size="1", color=theme.MUTED, data_testid="message-cut")),
        custom_attrs={"data-testid": "message", "data-role": msg.role},
        background=rx.cond(is_user, theme.BUBBLE_USER_BG, theme.BUBBLE_ASSISTANT_BG),
        padding="8px 14px",
        border_radius=theme.RADIUS,
        max_width="85%",
        align_self=rx.cond(is_user, "flex-end", "flex-start"),
        style={"overflowWrap": "anywhere", **_NO_OUTER_MARGIN, **theme.MARKDOWN_TABLE},
    )


def message(msg: MessageRow) -> rx.Component:
    """Render one row of the thread."""
    return rx.cond(msg.role == "tool", tool_row(msg), bubble(msg))
