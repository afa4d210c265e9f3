"""The thread's message rows as a virtualized list: the DOM holds the rows near the screen only.

The React side is ``assets/message_list.js``: ``react-virtuoso``'s ``Virtuoso`` (npm, MIT, maintained;
rows of any height are measured as they render, and rows prepended above keep the reader's place through
its ``firstItemIndex``), scrolling inside the thread page's own scroll box (``customScrollParent``), so the
live reply, the notices and the review stay below the list in the same box. The rows still come from
``rx.foreach`` (the same ``message`` component for each); the list mounts only those near the screen, so a
long thread parses the markdown of a screenful of rows, not of every row it holds.

Earlier rows are not in the browser until the reader scrolls up to the first one it has: then
``on_start_reached`` asks the server for earlier rows (``ChatState.show_earlier``: as many again as the tab holds).
The tab holds a window of at most ``ui/rows.py`` ``WINDOW_ROWS`` rows: far up a long thread, the latest rows
leave it, and ``on_end_reached`` brings them back as the reader scrolls down again (``ChatState.show_later``;
on the way down no row leaves the top, where react-virtuoso would lose the reader's place).
"""

# Tested by: tests/e2e/test_long_thread.py

from __future__ import annotations

from typing import Any

import reflex as rx

VIRTUOSO_PACKAGE = "react-virtuoso@4.18.21"
"""The npm package, pinned exactly (also in ``reflex.lock``)."""


class MessageList(rx.Component):
    """``<MessageList>`` from ``assets/message_list.js``.

    Props:
        first_index: the thread position (0-based) of the first row given; lower it by the number of
            rows prepended.
        later_count: how many rows of the thread come after the last row given (0: it is the thread's end).
        scroll_parent: the id of the element that scrolls the thread.
        gap: pixels between rows.

    Events:
        on_start_reached(): the reader scrolled up near the first row given while ``first_index > 0``
            (once per ``first_index``).
        on_end_reached(): the reader scrolled down to the last row given while ``later_count > 0`` (once
            per window end).
    """

    library = "$/public/message_list.js"
    tag = "MessageList"
    lib_dependencies: list[str] = [VIRTUOSO_PACKAGE]

    first_index: rx.Var[int]
    later_count: rx.Var[int]
    scroll_parent: rx.Var[str]
    gap: rx.Var[int]

    on_start_reached: rx.EventHandler[rx.event.no_args_event_spec]  # type: ignore[type-arg, valid-type]  # Reflex's own idiom
    on_end_reached: rx.EventHandler[rx.event.no_args_event_spec]  # type: ignore[type-arg, valid-type]


def message_list(rows: Any, first_index: Any, scroll_parent: str, **props: Any) -> rx.Component:
    """The list of ``rows`` (a foreach of message components) with the test id ``message-list``."""
    return MessageList.create(
        rows, first_index=first_index, scroll_parent=scroll_parent, custom_attrs={"data-testid": "message-list"}, **props
    )
