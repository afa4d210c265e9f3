"""Colours, spacing and radii in one place (the accent colour is set once, in ``rxconfig.py``)."""

# Tested by: tests/e2e/test_screens.py - the screenshots

RADIUS = "12px"
BUBBLE_USER_BG = "var(--indigo-3)"
BUBBLE_ASSISTANT_BG = "var(--gray-2)"
CARD_BG = "var(--amber-2)"
CARD_BORDER = "1px solid var(--amber-7)"
ERROR_COLOR = "var(--red-11)"
MUTED = "var(--gray-11)"
SIDEBAR_WIDTH = "260px"
CONTENT_MAX_WIDTH = "860px"
MONO = "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"
WRAP = {"overflowWrap": "anywhere", "minWidth": "0"}
"""Style of text that holds a person's name or email: an unbroken 100-character name wraps, never
pushes its row off-screen."""


ARGS_CODE_STYLE = {"margin": "0", "maxWidth": "100%", "overflowWrap": "anywhere", "wordBreak": "break-word"}
"""A code block of tool arguments (JSON): long unbroken values (an address, a path) wrap inside the
card instead of running past its edge on a phone."""

MARKDOWN_TABLE = {
    "& table": {"borderCollapse": "collapse", "margin": "0.6em 0", "display": "block", "maxWidth": "100%",
                "overflowX": "auto"},
    # the bubble breaks long words anywhere (overflowWrap: anywhere); a cell does not, so a narrow table
    # keeps "count" and "12" whole and scrolls sideways instead (a new user's pass saw "1" over "2")
    "& th, & td": {"border": "1px solid var(--gray-6)", "padding": "4px 10px", "verticalAlign": "top",
                   "overflowWrap": "normal", "wordBreak": "normal"},
    "& th": {"background": "var(--gray-a3)", "fontWeight": "600"},
}
"""A table in a message's markdown (a user's or the agent's pipe table): ruled cells with room
between them (unstyled, a header read "fruitcount"), and a table wider than the bubble scrolls
inside it rather than widening the page; a cell's words and numbers are never broken mid-word."""

TABLE_IN_SCROLL_BOX = {
    "& .rt-ScrollAreaRoot, & .rt-ScrollAreaViewport": {"overflow": "visible !important"},
}
"""On a table inside a box that scrolls sideways (``overflow_x="auto"``): the table's own Radix
scroll area stops clipping, so a row wider than the page scrolls in the box with a visible scrollbar
instead of being cut at the right edge behind a scrollbar shown only on hover (QA M4)."""
