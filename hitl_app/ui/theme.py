"""Colours, spacing and radii in one place (habit 8 of ../shared/style.md)."""

ACCENT = "indigo"
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

OUTCOME_COLOR = {
    "executed": "green",
    "edited": "blue",
    "rejected": "red",
    "answered": "violet",
    "error": "red",
}
