"""Grant matching (scopes, expiry, revocation) and deadline computation: the pure rules."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from hitl_app.agent.policy import DEFAULT_POLICY, PolicyError, load_policy_toml
from hitl_app.review.desk_policy import (
    DeskPolicyError,
    ToolDesk,
    expiry_note,
    human_duration,
    parse_duration,
    parse_tool_desk,
    review_deadline,
    undo_window,
)
from hitl_app.review.grants import (
    GrantError,
    GrantRequest,
    args_hash,
    check_grant,
    covers,
    grant_decider,
    grant_label,
    grant_note,
    grant_of,
)

NOW = datetime(2025, 5, 3, 14, 0, tzinfo=UTC)


@dataclass
class G:
    scope: str
    tool: str = "send_email"
    thread_id: str | None = "t1"
    owner_id: str = "1"
    args_hash: str | None = None
    expires_at: datetime = NOW + timedelta(hours=1)
    revoked_at: datetime | None = None


def hit(grant, *, thread="t1", owner="1", tool="send_email", args=None, now=NOW) -> bool:
    return covers(grant, thread_id=thread, owner_id=owner, tool=tool, args=args or {"to": "a@x.io"}, now=now)


def test_call_scope_covers_only_the_same_arguments_in_the_same_thread():
    g = G("call", args_hash=args_hash({"to": "a@x.io"}))
    assert hit(g)
    assert hit(g, args={"to": "a@x.io"})  # key order and formatting do not matter
    assert not hit(g, args={"to": "b@x.io"})
    assert not hit(g, thread="t2")
    assert not hit(g, tool="delete_file")


def test_thread_scope_covers_the_tool_in_that_thread_only():
    g = G("thread")
    assert hit(g, args={"to": "anyone@x.io"})
    assert not hit(g, thread="t2")
    assert not hit(g, tool="write_file")


def test_person_scope_covers_every_thread_of_the_owner():
    g = G("person", thread_id=None)
    assert hit(g, thread="t9")
    assert not hit(g, owner="2")
    assert not hit(g, owner="")


def test_an_expired_or_revoked_grant_covers_nothing():
    g = G("thread")
    assert hit(g, now=NOW + timedelta(minutes=59))
    assert not hit(g, now=NOW + timedelta(hours=1))  # ends exactly at expires_at
    assert not hit(G("thread", revoked_at=NOW), now=NOW)
    assert not hit(G("bogus"))


def test_grant_requests_are_parsed_strictly():
    assert GrantRequest.parse(None) is None and GrantRequest.parse("") is None
    assert GrantRequest.parse({"scope": "person", "hours": 24}) == GrantRequest("person", 24)
    for raw in ({"scope": "forever", "hours": 1}, {"scope": "thread", "hours": 2}, {"scope": "thread", "hours": True}, "x"):
        with pytest.raises(GrantError):
            GrantRequest.parse(raw)


def test_check_grant_refuses_what_the_policy_or_the_rights_do_not_allow():
    ok = dict(
        tool="send_email", grantable=True, decision_type="approve", approvals=1, person_is_owner=True, person_is_admin=False
    )
    check_grant(GrantRequest("person", 1), **ok)
    cases = [
        ({"grantable": False}, "not_grantable"),
        ({"approvals": 2}, "not_grantable"),
        ({"decision_type": "reject"}, "bad_request"),
        ({"person_is_owner": False}, "forbidden"),
    ]
    for change, code in cases:
        with pytest.raises(GrantError) as info:
            check_grant(GrantRequest("person", 1), **{**ok, **change})
        assert info.value.code == code
    check_grant(GrantRequest("thread", 1), **{**ok, "person_is_owner": False})  # a reviewer, in this thread


def test_grant_note_names_scope_maker_and_end():
    note = grant_note("thread", "Dana", NOW + timedelta(hours=1), NOW)
    assert note == "approved by grant: this tool in this thread, by Dana, until 15:00 UTC"
    assert grant_note("person", "Dana", NOW + timedelta(days=1), NOW, "Mia").endswith(
        "every thread of Mia, by Dana, until 4 May 14:00 UTC"
    )


def test_durations():
    assert parse_duration("15m") == 900 and parse_duration("2h") == 7200 and parse_duration("90s") == 90
    assert parse_duration("1d") == 86400 and parse_duration(30) == 30
    for bad in ("15", "0m", "31d", "soon", True):
        with pytest.raises(DeskPolicyError):
            parse_duration(bad)
    assert [human_duration(s) for s in (45, 900, 5400, 7200, 86400)] == ["45 s", "15 min", "1 h 30 min", "2 h", "1 day"]
    assert expiry_note(900, "reject") == "expired after 15 min, rejected by policy"


def test_review_deadline_is_the_earliest_of_its_tools():
    desks = {"send_email": ToolDesk(deadline_s=900), "write_file": ToolDesk(deadline_s=60), "read": ToolDesk()}
    d = review_deadline(NOW, ["send_email", "write_file", "read"], desks)
    assert d is not None and d.tool == "write_file" and d.due_at == NOW + timedelta(minutes=1)
    assert d.seconds_left(NOW) == 60
    assert review_deadline(NOW, ["read", "other"], desks) is None
    assert undo_window(["send_email", "x"], {"send_email": ToolDesk(undo_seconds=10)}) == 10


def test_desk_keys_are_checked_with_one_clear_line():
    assert parse_tool_desk({}) == ToolDesk()
    desk = parse_tool_desk({"deadline": "15m", "on_timeout": "escalate", "escalate_to": "reviewer", "undo_seconds": 10})
    assert (desk.deadline_s, desk.on_timeout, desk.escalate_to, desk.undo_seconds) == (900, "escalate", "reviewer", 10)
    bad = [
        ({"on_timeout": "reject"}, "on_timeout: set a deadline"),
        ({"deadline": "1m", "on_timeout": "ignore"}, "on_timeout:"),
        ({"deadline": "1m", "escalate_to": "admin"}, "escalate_to: only used"),
        ({"deadline": "1m", "on_timeout": "escalate", "escalate_to": "boss"}, "escalate_to: 'boss'"),
        ({"grantable": "no"}, "grantable:"),
        ({"undo_seconds": 301}, "undo_seconds:"),
    ]
    for table, words in bad:
        with pytest.raises(DeskPolicyError) as info:
            parse_tool_desk(table)
        assert str(info.value).startswith(words), str(info.value)


def test_policy_file_reads_desk_keys_and_the_default_forbids_grants_for_payments(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('[tools.send_email]\nallowed_decisions = ["approve"]\ndeadline = "15m"\nundo_seconds = 10\n')
    [rule] = load_policy_toml(path)
    assert rule.desk.deadline_s == 900 and rule.desk.undo_seconds == 10
    path.write_text('[tools.send_email]\nallowed_decisions = ["approve"]\ndeadline = "soon"\n')
    with pytest.raises(PolicyError, match=r"\[tools.send_email\] deadline: 'soon' is not a duration"):
        load_policy_toml(path)
    assert {r.tool: r.desk.grantable for r in DEFAULT_POLICY}["transfer_funds"] is False


def test_a_cards_grant_decider_names_the_grant_and_reads_as_approved_by_it():
    assert grant_decider(12) == "grant:12" and grant_of("grant:12") == 12
    assert grant_of("12") is None and grant_of("grant:") is None and grant_of("grant:x1") is None and grant_of(None) is None
    assert grant_label("thread", "Dana") == "grant: this tool in this thread, by Dana"
    assert grant_label("person", "Dana", "Mo") == "grant: this tool in every thread of Mo, by Dana"
