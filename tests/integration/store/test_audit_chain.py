"""The audit chain (store/audit_chain.py, store/audit_proof.py) on SQLite and PostgreSQL.

The history is written the way the app writes it (claims, a released claim, executed arguments
cleared, review events, a grant's use), then changed with plain SQL behind the app's back (an
edit, a delete, an insert, in the audit rows and in the chain itself); ``python -m hitl_app audit
verify`` must pass on the clean history and name the record each time. Exports are signed with
an Ed25519 key made by ``audit keygen`` and checked offline by the same command.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from hitl_app.review import ActionRequest, ApproveDecision, PendingReview, RejectDecision, ReviewConfig
from hitl_app.store.audit_chain import GENESIS, link_hash, read_chain
from hitl_app.store.audit_proof import Link, verify_database
from hitl_app.store.desk import add_event
from hitl_app.store.desk_tables import ReviewEvent
from hitl_app.store.reviews import clear_executed, release_claim
from tests.helpers.claims import claim

ROOT = Path(__file__).resolve().parents[3]


def review(interrupt_id: str, thread_id: str = "t1") -> PendingReview:
    actions = [("send_email", {"to": "bob@example.com", "subject": "lunch", "priority": 2.5}),
               ("delete_file", {"path": "notes/x.txt"})]
    return PendingReview(
        thread_id=thread_id, interrupt_id=interrupt_id,
        action_requests=tuple(ActionRequest(name=n, args=a) for n, a in actions),
        review_configs=tuple(ReviewConfig(action_name=n, allowed_decisions=("approve", "reject")) for n, _ in actions),
        tool_call_ids=(f"{interrupt_id}-c1", f"{interrupt_id}-c2"), checkpoint_id="cp1",
    )


async def history(session) -> None:
    """Three reviews decided, one claim released, one call's executed args cleared, two events."""
    async with session() as s:
        await claim(s, review("i1"), [ApproveDecision(type="approve"), RejectDecision(type="reject", message="not now")], "Dana")
        await claim(s, review("i2"), [ApproveDecision(type="approve")] * 2, "Lee")
        await release_claim(session=s, interrupt_id="i2")
        await claim(s, review("i2"), [RejectDecision(type="reject")] * 2, "Ada \u202e (rtl)")
        await clear_executed(session=s, thread_id="t1", tool_call_ids=["i1-c1"])
        await add_event(session=s, event=ReviewEvent(thread_id="t1", interrupt_id="i3", kind="expired", note="deadline"))
        await add_event(session=s, event=ReviewEvent(thread_id="t1", interrupt_id="i3", kind="resumed"))


def cli(url: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": url, "HITL_DATA_DIR": str(tmp_path)}
    return subprocess.run([sys.executable, "-m", "hitl_app", "audit", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)


def sql(engines, statement: str, **params) -> None:
    """Change the database behind the app's back (plain SQL, no app code)."""
    with engines.sync.begin() as conn:
        conn.execute(text(statement), params)


async def first_problem(session) -> str:
    async with session() as s:
        verdict = await verify_database(session=s)
    assert not verdict.ok, "verify found nothing wrong"
    return str(verdict.problems[0])


async def test_clean_history_verifies_and_each_sql_change_is_named(engines, session, database_url, tmp_path):
    await history(session)
    async with session() as s:
        links = await read_chain(session=s)
        clean = await verify_database(session=s)
    assert [link.kind for link in links] == ["decided", "decided", "released", "decided", "cleared", "event", "event"]
    assert clean.ok, clean.problems
    ok = cli(database_url, tmp_path, "verify")
    assert ok.returncode == 0 and "intact (7 chain entries" in ok.stdout, ok.stdout + ok.stderr

    ids = [r[0] for r in engines.sync.connect().execute(text("SELECT id FROM audit_records ORDER BY id")).all()]
    first, second = ids[0], ids[1]
    sql(engines, "UPDATE audit_records SET decision_type = 'approve' WHERE id = :i", i=second)
    edited = cli(database_url, tmp_path, "verify")
    assert edited.returncode == 1
    assert f"first problem: audit record #{second} was changed: decision_type is \"approve\"" in edited.stderr, edited.stderr
    sql(engines, "UPDATE audit_records SET decision_type = 'reject' WHERE id = :i", i=second)
    assert (await first_problem_or_none(session)) is None  # put back as it was: intact again

    sql(engines, "DELETE FROM audit_records WHERE id = :i", i=first)
    assert (await first_problem(session)).startswith(f"audit record #{first} was removed: chain entry #5 wrote it")
    sql(engines, "INSERT INTO audit_records (id, thread_id, interrupt_id, action_index, tool_name, decision_type, "
                 "args_proposed, reviewer, requested_at, decided_at, waited_seconds) VALUES (:i, 't1', 'i9', 0, "
                 "'send_email', 'approve', '{}', 'Mallory', '2026-01-01 00:00:00', '2026-01-01 00:00:00', 0)", i=900)
    problems = await all_problems(session)
    assert "audit record #900 was inserted: no chain entry wrote it" in problems


async def first_problem_or_none(session) -> str | None:
    async with session() as s:
        verdict = await verify_database(session=s)
    return None if verdict.ok else str(verdict.problems[0])


async def all_problems(session) -> list[str]:
    async with session() as s:
        return [str(p) for p in (await verify_database(session=s)).problems]


async def test_changes_to_the_chain_itself_are_named(engines, session):
    await history(session)
    sql(engines, "UPDATE audit_chain SET body = replace(body, 'not now', 'fine') WHERE seq = 1")
    assert await first_problem(session) == "chain entry #1 was changed: its content does not match its hash"
    sql(engines, "DELETE FROM audit_chain WHERE seq = 1")
    problems = await all_problems(session)
    assert problems[0] == "chain entry #1 was removed: the chain goes from #0 to #2"
    sql(engines, "DELETE FROM audit_chain WHERE seq = 4")
    assert "chain entry #4 was removed: the chain goes from #3 to #5" in await all_problems(session)
    sql(engines, "INSERT INTO audit_chain (seq, at, kind, body, prev_hash, hash) "
                 "SELECT 4, at, kind, body, prev_hash, :h FROM audit_chain WHERE seq = 3", h="f" * 64)
    assert "chain entry #4 was changed: its content does not match its hash" in await all_problems(session)


async def test_concurrent_appends_keep_one_chain(engines, session):
    """Twelve claims at once from separate sessions (as from several workers): one unbroken chain."""
    async def one(n: int) -> None:
        async with session() as s:
            await claim(s, review(f"c{n}", thread_id=f"t{n}"), [ApproveDecision(type="approve")] * 2, f"R{n}")

    await asyncio.gather(*(one(n) for n in range(12)))
    async with session() as s:
        links = await read_chain(session=s)
        verdict = await verify_database(session=s)
    assert [link.seq for link in links] == list(range(1, 13))
    assert verdict.ok, verdict.problems


@pytest.mark.slow
async def test_signed_export_verifies_offline_and_names_a_change(engines, session, database_url, tmp_path):
    await history(session)
    key, pub, other_key, other_pub = (str(tmp_path / n) for n in ("admin.key", "admin.pub", "o.key", "o.pub"))
    assert cli(database_url, tmp_path, "keygen", "--private-key", key, "--public-key", pub).returncode == 0
    assert cli(database_url, tmp_path, "keygen", "--private-key", other_key, "--public-key", other_pub).returncode == 0
    assert oct(Path(key).stat().st_mode & 0o777) == "0o600"
    for fmt in ("json", "csv"):
        out = tmp_path / f"audit.{fmt}"
        made = cli(database_url, tmp_path, "export", "--format", fmt, "--private-key", key, "--out", str(out))
        assert made.returncode == 0, made.stderr
        # offline: no database named at all
        checked = cli("sqlite:////nonexistent/dir/x.sqlite", tmp_path, "verify", "--export", str(out), "--public-key", pub)
        assert checked.returncode == 0 and "intact (7 chain entries" in checked.stdout, checked.stdout + checked.stderr
        wrong_key = cli(database_url, tmp_path, "verify", "--export", str(out), "--public-key", other_pub)
        assert wrong_key.returncode == 1 and "signature was changed: it does not verify" in wrong_key.stderr
        body = out.read_text()
        out.write_text(body.replace("not now", "fine", 1))
        tampered = cli(database_url, tmp_path, "verify", "--export", str(out), "--public-key", pub)
        assert tampered.returncode == 1
        assert "first problem: chain entry #1 was changed: its content does not match its hash" in tampered.stderr
    doc = json.loads((tmp_path / "audit.json").read_text())
    assert doc["signature"]["alg"] == "Ed25519" and doc["signed"]["links"] == 7


@pytest.mark.parametrize("attack", ["rewrite", "truncate"])
async def test_an_earlier_signed_export_catches_a_chain_rewritten_with_new_hashes(engines, session, database_url,
                                                                                    tmp_path, attack):
    """Someone who knows the scheme changes a decision and recomputes every hash after it (or cuts
    the last entry and its row): ``verify`` alone finds the chain intact, as the README says; checked
    against an export signed before, the changed or removed entry is named."""
    await history(session)
    key, pub, anchor = str(tmp_path / "a.key"), str(tmp_path / "a.pub"), str(tmp_path / "anchor.json")
    assert cli(database_url, tmp_path, "keygen", "--private-key", key, "--public-key", pub).returncode == 0
    assert cli(database_url, tmp_path, "export", "--private-key", key, "--out", anchor).returncode == 0
    if attack == "rewrite":
        sql(engines, "UPDATE audit_records SET reviewer = 'Eve' WHERE reviewer = 'Dana'")
        async with session() as s:
            links = [Link.of(r) for r in await read_chain(session=s)]
        prev = GENESIS
        for link in links:
            body = link.body.replace('"reviewer":"Dana"', '"reviewer":"Eve"')
            digest = link_hash(seq=link.seq, at=link.at, kind=link.kind, prev_hash=prev, body=body)
            sql(engines, "UPDATE audit_chain SET body = :b, prev_hash = :p, hash = :h WHERE seq = :s",
                b=body, p=prev, h=digest, s=link.seq)
            prev = digest
        named = "first problem: chain entry #1 was changed: its hash is"
    else:
        sql(engines, "DELETE FROM review_events WHERE id = (SELECT max(id) FROM review_events)")
        sql(engines, "DELETE FROM audit_chain WHERE seq = 7")
        named = "first problem: chain entry #7 was removed: the signed export holds it"
    alone = cli(database_url, tmp_path, "verify")
    assert alone.returncode == 0, "the limit the README names: a consistent rewrite passes verify alone"
    against = cli(database_url, tmp_path, "verify", "--against", anchor, "--public-key", pub)
    assert against.returncode == 1 and named in against.stderr, against.stdout + against.stderr
