"""The audit chain has one door (store/audit_chain.py ``append_facts``): every module that writes,
changes or deletes audit rows or review events appends their fact in the same transaction, and only
store/ modules write them. A static check over the app's source, so a new writer that forgets the
chain fails here first."""

from __future__ import annotations

import re
from pathlib import Path

APP = Path(__file__).resolve().parents[3] / "hitl_app"
NAMED = re.compile(r"\b(AuditRecord|ReviewEvent)\b")
STATEMENT = re.compile(r"\b(update|delete|insert)\((AuditRecord|ReviewEvent)\)")
ADDS = re.compile(r"session\.add(_all)?\(")


def test_every_audit_writer_appends_to_the_chain():
    writers, outside = [], []
    for path in sorted(APP.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if not NAMED.search(text):
            continue
        in_store = path.parent.name == "store"
        if STATEMENT.search(text) and not in_store:
            outside.append(str(path.relative_to(APP.parent)))
        if in_store and (STATEMENT.search(text) or ADDS.search(text)):
            writers.append(path)
    assert outside == [], f"audit rows or review events written outside store/: {outside}"
    assert len(writers) >= 4, "the check found too few writers: its patterns are out of date"
    missing = [str(p.relative_to(APP.parent)) for p in writers if "append_facts(" not in p.read_text(encoding="utf-8")]
    assert missing == [], f"these write audit rows or review events without append_facts: {missing}"
