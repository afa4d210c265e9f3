"""Text from an agent, a tool or an MCP server as a person is shown it: written out, never acting.

Bidirectional format characters (U+202E RIGHT-TO-LEFT OVERRIDE turns ``invoice <RLO>fdp.exe`` into
what reads as "invoice exe.pdf"), invisible ones (zero-width space, joiners) and control characters
(terminal escapes, BEL) in a tool's arguments or result would otherwise make a card, the inbox, the
audit or a mail say something other than what the call does (case C27). ``shown_controls`` writes
each as ``<U+202E>``; line breaks and tabs stay. Display only: the arguments the tool runs with, and
the text the JSON editor edits, are never changed.

Source of the character classes: Unicode's Bidi_Control and Default_Ignorable code points (the
ranges below) and the C0/C1 control blocks.
"""

# Tested by: tests/unit/review/test_shown.py

from __future__ import annotations

import re

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def shown_controls(text: str) -> str:
    """``text`` with every control, invisible and bidirectional format character written out as
    ``<U+XXXX>`` (line breaks and tabs kept). Returns the text unchanged (the same object) when it
    has none."""
    return _CONTROLS.sub(lambda m: f"<U+{ord(m[0]):04X}>", text) if _CONTROLS.search(text) else text
