"""Checks of a policy against the agent's tools, made when the agent is built."""

# Tested by: tests/unit/agent/test_policy_rights.py

from __future__ import annotations

from hitl_app.agent.policy import PolicyError, PolicyRule


def check_rights_arguments(rules: list[PolicyRule], arg_names: dict[str, set[str]]) -> None:
    """Check that every ``when`` of a rights rule reads arguments its tool has.

    Args:
        rules: the policy.
        arg_names: tool name -> its argument names (tools missing here are not checked).

    Raises:
        PolicyError: ``[tools.<name>] rules[<i>] when: unknown argument 'x'; <name> takes a, b``.
    """
    for rule in rules:
        known = arg_names.get(rule.tool)
        for i, cond in enumerate(rule.rights.rules):
            unknown = [f for f in cond.when.fields if known is not None and f not in known]
            if unknown:
                raise PolicyError(
                    f"policy: [tools.{rule.tool}] rules[{i}] when: unknown argument {unknown[0]!r}; "
                    f"{rule.tool} takes {', '.join(sorted(known or ())) or 'no arguments'}"
                )
