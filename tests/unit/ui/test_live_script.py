"""``live_script`` is exactly the event ``rx.call_script`` would send, built without the Var round trip."""

from __future__ import annotations

import json

import pytest
import reflex as rx
from reflex.event import Event

from hitl_app.ui.state.live import live_script


@pytest.mark.parametrize(
    ("key", "seq", "text", "reset"),
    [
        ("ab12cd34", 0, "", True),
        ("ab12cd34", 7, "word ", False),
        ("k", 3, 'quotes " and \\ backslash </script> ', False),
        ("k", 4, "é 漢字 😀\n", False),
        ("k", 0, "snapshot so far", True),
    ],
)
def test_live_script_is_the_call_script_event(key: str, seq: int, text: str, reset: bool) -> None:
    args = [key, seq, text, 1] if reset else [key, seq, text]
    code = f"hitlLive({json.dumps(args, ensure_ascii=False, separators=(',', ':'))})"
    assert Event.from_event_type(live_script(key, seq, text, reset)) == Event.from_event_type(rx.call_script(code))
