"""The policy's risk keys: read, refused with one plain line, and what they change on the draft."""

from __future__ import annotations

import pytest

from hitl_app.agent.policy import DEFAULT_POLICY, PolicyError, load_policy_toml
from hitl_app.review import draft
from hitl_app.review.risk_policy import (
    NO_RISK,
    RiskPolicyError,
    ToolRisk,
    parse_tool_risk,
    risks_by_tool,
)
from hitl_app.ui import review_text
from hitl_app.ui.cards.card_rows import CardRow


def test_risk_and_note_are_read_and_checked():
    assert parse_tool_risk({"risk": "High", "risk_note": " Moves money "}) == ToolRisk("high", "Moves money")
    assert parse_tool_risk({}) == NO_RISK
    with pytest.raises(RiskPolicyError, match="risk: must be one of"):
        parse_tool_risk({"risk": "extreme"})
    with pytest.raises(RiskPolicyError, match="risk_note: set risk too"):
        parse_tool_risk({"risk_note": "why"})
    with pytest.raises(RiskPolicyError, match="one line"):
        parse_tool_risk({"risk": "low", "risk_note": "a\nb"})


def test_policy_file_risk_keys_and_the_default_policy(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(
        '[tools.delete_file]\nallowed_decisions = ["approve", "reject"]\nrisk = "medium"\nrisk_note = "Files are gone"\n'
    )
    assert risks_by_tool(load_policy_toml(path)) == {"delete_file": ToolRisk("medium", "Files are gone")}
    path.write_text('[tools.delete_file]\nallowed_decisions = ["approve"]\nrisk = 3\n')
    with pytest.raises(PolicyError, match=r"\[tools.delete_file\] risk: must be one of"):
        load_policy_toml(path)
    assert risks_by_tool(DEFAULT_POLICY) == {"transfer_funds": ToolRisk("high", "Moves money out of the company account")}


def _card(index: int, choice: str = "", risk: str = "") -> CardRow:
    return CardRow(index=index, tool_name="t", description="", allowed=["approve", "reject"], choice=choice, risk=risk)


def test_high_risk_cards_are_never_approved_in_bulk():
    cards = [_card(0), _card(1, risk="high")]
    assert not draft.offers_approve_rest(cards)
    assert draft.approve_rest(cards) == [0]
    cards[1] = _card(1, "reject", risk="high")  # decided on its own: the rest may be approved
    assert draft.offers_approve_rest(cards) and review_text.approve_rest_label(cards) == "Approve the rest"
    assert draft.offers_approve_rest([_card(0, risk="medium")])
