"""The review-rights keys of the policy file: team.toml, defaults, and one clear line per mistake."""

from __future__ import annotations

import pytest

from hitl_app.agent.build import build_demo_agent
from hitl_app.agent.demo import DemoChatModel
from hitl_app.agent.policy import (
    DEFAULT_POLICY,
    PolicyError,
    describe_policy,
    load_policy_toml,
    rights_by_tool,
)
from hitl_app.review.rights import DEFAULT_RIGHTS, DEFAULT_RULE, ReviewRule
from tests.helpers.paths import ROOT

TEAM = ROOT / "examples" / "policies" / "team.toml"


def test_default_policy_keeps_single_user_rights_and_pays_with_approve_or_reject():
    rights = rights_by_tool(DEFAULT_POLICY)
    assert set(rights.values()) == {DEFAULT_RIGHTS}
    transfer = next(r for r in DEFAULT_POLICY if r.tool == "transfer_funds")
    assert transfer.allowed_decisions == ["approve", "reject"]
    assert rights["transfer_funds"].rule_for({"amount": 10**6, "to": "x"}) == DEFAULT_RULE


def test_team_policy_needs_a_reviewer_no_self_approval_and_two_above_1000():
    rules = load_policy_toml(TEAM)
    transfer = rights_by_tool(rules)["transfer_funds"]
    assert transfer.rule_for({"amount": 1000, "to": "Bob"}) == ReviewRule(("reviewer",), False, 1)
    assert transfer.rule_for({"amount": 1500, "to": "Bob"}) == ReviewRule(("reviewer",), False, 2)
    by_tool = {r.tool: r for r in rules}
    assert by_tool["transfer_funds"].allowed_decisions == ["approve", "reject"]
    assert by_tool["ask_user"].rights == DEFAULT_RIGHTS  # only the person chatting answers
    assert describe_policy(rules)[0]["rights"]["rules"] == [{"when": "amount > 1000", "approvals": 2}]


def test_a_file_without_rights_keys_keeps_the_defaults(tmp_path):
    p = tmp_path / "p.toml"
    p.write_text('[tools.send_email]\nallowed_decisions = ["approve"]\n')
    assert load_policy_toml(p)[0].rights == DEFAULT_RIGHTS


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('reviewers = ["reviewers"]', "[tools.transfer_funds] reviewers: 'reviewers' is not a role"),
        ('reviewers = ["dana@"]', "[tools.transfer_funds] reviewers: 'dana@' is not a role"),
        ('self_approval = "no"', "[tools.transfer_funds] self_approval: must be true or false"),
        ("approvals = 11", "[tools.transfer_funds] approvals: must be a whole number from 1 to 10"),
        ('approvals = 2', "[tools.transfer_funds] approvals: 2 needed but only 1 person may approve"),
        ('reviewers = ["reviewer"]\n[[tools.transfer_funds.rules]]\nwhen = "amount >"\napprovals = 2',
         "[tools.transfer_funds] rules[0] when: 'amount >': each comparison must be"),
        ('reviewers = ["reviewer"]\n[[tools.transfer_funds.rules]]\nwhen = "amount > 1000"\napprovals = "2"',
         "[tools.transfer_funds] rules[0] approvals: must be a whole number"),
        ('reviewers = ["reviewer"]\n[[tools.transfer_funds.rules]]\nwhen = "amount > 1000"',
         "[tools.transfer_funds] rules[0]: sets nothing"),
        ('reviewers = ["reviewer"]\nrule = []', "[tools.transfer_funds]: unknown key(s) ['rule']"),
    ],
)
def test_rights_mistakes_name_the_file_table_and_key_in_one_line(tmp_path, body, needle):
    p = tmp_path / "bad.toml"
    p.write_text('[tools.transfer_funds]\nallowed_decisions = ["approve", "reject"]\n' + body + "\n")
    with pytest.raises(PolicyError) as info:
        load_policy_toml(p)
    message = str(info.value)
    assert message.startswith(str(p)) and needle in message and "\n" not in message


def test_a_condition_on_an_argument_the_tool_lacks_stops_the_build(workspace, tmp_path):
    p = tmp_path / "typo.toml"
    p.write_text(TEAM.read_text().replace('when = "amount > 1000"', 'when = "amout > 1000"'))
    rules = load_policy_toml(p)  # the file alone cannot know the tool's arguments
    with pytest.raises(PolicyError, match=r"\[tools.transfer_funds\] rules\[0\] when: unknown argument 'amout'; "
                                          r"transfer_funds takes amount, to"):
        build_demo_agent(model=DemoChatModel(), workspace=workspace, checkpointer=None, policy_rules=rules)
