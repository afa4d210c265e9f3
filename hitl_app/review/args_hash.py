"""The hash of a card's arguments: what a decision from outside the page names to say what it saw.

A decision made through the API or a mail link names the review, the card and ``args_hash`` of the
action request it was shown; the server refuses it when the card's arguments hash differently now
(case C24: arguments changed since they were shown). Pure: no I/O, nothing of the app imported
at all.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def args_hash(tool: str, args: Mapping[str, Any]) -> str:
    """SHA-256 (64 hex characters) of a card's tool name and arguments as canonical JSON
    (keys sorted, no spaces, UTF-8; a value JSON cannot carry is hashed as its ``str``)."""
    text = json.dumps({"name": tool, "args": dict(args)}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
