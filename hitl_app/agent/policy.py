"""The review policy as data: which tool calls pause for a reviewer, and what they may decide.

A ``PolicyRule`` names a tool, the decisions allowed (``approve``, ``edit``, ``reject``,
``respond``), a description template filled from the call's args (``"Send an email to {to}"``)
and an optional NAMED condition from ``CONDITIONS``. Tools without a rule never pause.

``interrupt_on_from_policy`` turns rules into the ``interrupt_on`` mapping of LangChain's
``HumanInTheLoopMiddleware`` (langchain 1.5.2): ``description`` is a callable
``(tool_call, state, runtime) -> str`` and ``when`` a ``PolicyCondition``, a callable
``(ToolCallRequest) -> bool`` (True = pause).

The middleware calls ``when`` again when a run resumes, and in batched mode the reviewer's
decisions are matched to the calls that paused by position: if the answer changes in between,
resuming fails ("Number of human decisions (1) does not match number of hanging tool calls (2)")
or, worse, skips a decision. A condition may depend on data that changes meanwhile (the
built-in SQL condition does not: it classifies against the fixed demo schema; a custom one may).
So the answer is taken ONCE per tool call:
``ReviewNeedMemo``, an after_model middleware that runs just before the HITL middleware, stores
``{tool_call_id: needs_review}`` in graph state (``REVIEW_NEED_KEY``, checkpointed with the
thread), and ``PolicyCondition`` returns that stored answer whenever it exists.

``load_policy_toml`` reads the same rules from a TOML file::

    [tools.send_email]
    allowed_decisions = ["approve", "reject"]
    description = "Send an email to {to}"
    condition = "outside_drafts"   # optional
    reviewers = ["reviewer"]       # optional review rights: who decides, self-approval,
    self_approval = false          # distinct approvals and stricter [[tools.x.rules]] with a
    approvals = 1                  # when = "amount > 1000" (see hitl_app.review.rights_policy)
    deadline = "15m"               # optional desk keys: on_timeout, timeout_message, escalate_to,
    undo_seconds = 10              # grantable (see hitl_app.review.desk_policy)
    risk = "high"                  # optional: a badge and one line on the card (risk_policy)
"""

from __future__ import annotations

import string
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, cast

from langchain.agents.middleware import AgentState, InterruptOnConfig
from langchain_core.messages import ToolCall
from langgraph.runtime import Runtime

from hitl_app.agent.review_need import PolicyCondition
from hitl_app.agent.sql_guard import is_read_only_sql
from hitl_app.errors import StartupError
from hitl_app.review.desk_policy import DEFAULT_DESK, DESK_KEYS, DeskPolicyError, ToolDesk, parse_tool_desk
from hitl_app.review.rights_policy import (
    DEFAULT_RIGHTS,
    RIGHTS_KEYS,
    RightsPolicyError,
    ToolRights,
    parse_tool_rights,
)
from hitl_app.review.risk_policy import NO_RISK, RISK_KEYS, RiskPolicyError, ToolRisk, parse_tool_risk
from hitl_app.review.types import DECISION_TYPES, DecisionType

if TYPE_CHECKING:  # the type of InterruptOnConfig["description"]; LangChain does not export it
    from langchain.agents.middleware.human_in_the_loop import _DescriptionFactory


class PolicyError(StartupError):
    """An invalid policy: the message names the file, the table/key and the reason."""


@dataclass(frozen=True)
class PolicyRule:
    """One tool's review rule.

    Attributes:
        tool: tool name, e.g. ``"send_email"``.
        allowed_decisions: non-empty subset of ``DECISION_TYPES``, in display order.
        description: template filled with the call's args by ``str.format`` (plain ``{name}``
            fields only); if it cannot be filled the card says ``"Tool <name>"``.
        condition: a key of ``CONDITIONS``, or None to pause on every call.
        rights: who may decide and how many approvals are needed (default: the thread's owner
            decides alone, as a single user always has).
        desk: deadline, grants and undo window (default: none, grantable, none).
        risk: the risk level and note shown on the card (``hitl_app.review.risk_policy``).
    """

    tool: str
    allowed_decisions: list[str]
    description: str
    condition: str | None = None
    rights: ToolRights = DEFAULT_RIGHTS
    desk: ToolDesk = DEFAULT_DESK
    risk: ToolRisk = NO_RISK


# A condition factory gets the demo database path and returns a predicate on the call's args
# (True = pause for review).
ConditionFactory = Callable[[Path], Callable[[Mapping[str, Any]], bool]]


def _outside_drafts(_db: Path) -> Callable[[Mapping[str, Any]], bool]:
    """Pause unless ``args["path"]`` is a plain relative path under ``drafts/``."""

    def predicate(args: Mapping[str, Any]) -> bool:
        path = args.get("path")
        if not isinstance(path, str) or "\\" in path or "\x00" in path:
            return True
        pure = PurePosixPath(path)
        parts = [p for p in pure.parts if p != "."]
        inside = (
            not pure.is_absolute() and ".." not in parts and len(parts) >= 2 and parts[0] == "drafts"
        )
        return not inside

    return predicate


def _not_read_only_sql(_db: Path) -> Callable[[Mapping[str, Any]], bool]:
    """Pause unless ``args["query"]`` is one statement that only reads (``is_read_only_sql``,
    which compiles it against the fixed demo schema, so the answer is the same on resume)."""

    def predicate(args: Mapping[str, Any]) -> bool:
        query = args.get("query")
        return not (isinstance(query, str) and is_read_only_sql(query))

    return predicate


CONDITIONS: dict[str, ConditionFactory] = {
    "outside_drafts": _outside_drafts,
    "not_read_only_sql": _not_read_only_sql,
}
"""Named conditions usable from ``PolicyRule.condition`` and the TOML file."""


DEFAULT_POLICY: list[PolicyRule] = [
    PolicyRule("send_email", ["approve", "edit", "reject"], "Send an email to {to}: {subject}"),
    PolicyRule("write_file", ["approve", "edit", "reject"], "Write the file {path}", "outside_drafts"),
    # Deleting is approve-or-reject only; a HITL_POLICY file may also allow edit (e.g. a path).
    PolicyRule("delete_file", ["approve", "reject"], "Delete the file {path}"),
    PolicyRule("execute_sql", ["approve", "reject"], "Run SQL that changes data: {query}", "not_read_only_sql"),
    PolicyRule("ask_user", ["respond"], "Question for you: {question}"),
    PolicyRule("slow_task", ["approve", "reject"], "Wait {seconds} seconds"),
    PolicyRule("transfer_funds", ["approve", "reject"], "Pay {amount} to {to}", desk=ToolDesk(grantable=False),
               risk=ToolRisk("high", "Moves money out of the company account")),
]
"""The built-in policy. ``read_data`` is not listed, so it never pauses."""


def render_description(template: str, tool_name: str, args: Mapping[str, Any]) -> str:
    """Fill ``template`` with ``args``; ``"Tool <tool_name>"`` if that fails (missing key, ...)."""
    try:
        return template.format(**dict(args))
    except (KeyError, IndexError, ValueError, AttributeError, TypeError):
        return f"Tool {tool_name}"


def interrupt_on_from_policy(
    rules: list[PolicyRule], demo_db_path: Path
) -> dict[str, InterruptOnConfig]:
    """Build HumanInTheLoopMiddleware's ``interrupt_on`` from ``rules``.

    Returns ``{tool: {"allowed_decisions": [...], "description": callable, "when"?: callable}}``.
    ``description`` has the middleware's signature ``(tool_call, state, runtime) -> str``;
    ``when`` is a ``PolicyCondition`` (give the same mapping to ``ReviewNeedMemo`` so its answer
    stays the same on resume).

    Raises:
        PolicyError: a rule is invalid (see ``validate_rule``).
    """
    result: dict[str, InterruptOnConfig] = {}
    for rule in rules:
        validate_rule(rule, source="policy")
        config: InterruptOnConfig = {
            "allowed_decisions": cast(list[DecisionType], list(rule.allowed_decisions)),  # checked by validate_rule
            "description": _describer(rule),
        }
        if rule.condition:
            predicate = CONDITIONS[rule.condition](Path(demo_db_path))
            config["when"] = PolicyCondition(rule.condition, predicate)
        result[rule.tool] = config
    return result


def _describer(rule: PolicyRule) -> _DescriptionFactory:
    def describe(tool_call: ToolCall, state: AgentState[Any], runtime: Runtime[Any]) -> str:
        return render_description(rule.description, tool_call["name"], tool_call.get("args") or {})

    return describe


def validate_rule(rule: PolicyRule, *, source: str) -> None:
    """Check one rule; ``source`` prefixes the message (e.g. ``"policy.toml: [tools.x]"``).

    Raises:
        PolicyError: empty/unknown decisions, unknown condition, or a description template
            with anything but plain ``{name}`` fields.
    """
    where = f"{source}: [tools.{rule.tool}]"
    if not rule.tool or not isinstance(rule.tool, str):
        raise PolicyError(f"{source}: a rule has no tool name")
    if not isinstance(rule.allowed_decisions, list) or not rule.allowed_decisions:
        raise PolicyError(f"{where} allowed_decisions: must be a non-empty list of {list(DECISION_TYPES)}")
    for decision in rule.allowed_decisions:
        if decision not in DECISION_TYPES:
            raise PolicyError(
                f"{where} allowed_decisions: unknown decision type {decision!r}; "
                f"expected some of {list(DECISION_TYPES)}"
            )
    if rule.condition is not None and rule.condition not in CONDITIONS:
        raise PolicyError(
            f"{where} condition: unknown condition {rule.condition!r}; known: {sorted(CONDITIONS)}"
        )
    if not isinstance(rule.description, str):
        raise PolicyError(f"{where} description: must be a string")
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(rule.description) if f is not None]
    except ValueError as exc:
        raise PolicyError(f"{where} description: bad template ({exc})") from exc
    for name in fields:
        if not name.isidentifier():
            raise PolicyError(
                f"{where} description: field {{{name}}} must be a plain argument name like {{to}}"
            )


_RULE_KEYS = {"allowed_decisions", "description", "condition", *RIGHTS_KEYS, *DESK_KEYS, *RISK_KEYS}


def read_policy_tables(path: Path | str) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """The ``[tools.*]`` and ``[servers.*]`` tables of a policy file, as read (not yet checked).

    ``[servers.<name>]`` tables are an MCP server's keys (``hitl_app.agent.mcp.policy``); a tool
    named ``<server>__<tool>`` is an MCP server's tool.

    Raises:
        PolicyError: unreadable file, TOML syntax error (tomllib's line/column kept), neither a
            ``[tools]`` nor a ``[servers]`` table, other top-level keys, a table that is not one.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read the policy file ({exc.strerror or exc})") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"{path}: invalid TOML: {exc}") from exc
    tools, servers = data.get("tools", {}), data.get("servers", {})
    if not isinstance(tools, dict) or not isinstance(servers, dict) or not (tools or servers):
        raise PolicyError(f"{path}: expected a [tools.<name>] table for at least one tool")
    extra_top = sorted(set(data) - {"tools", "servers"})
    if extra_top:
        raise PolicyError(f"{path}: unknown top-level key(s) {extra_top}; only [tools.*] and [servers.*] are read")
    for kind, tables in (("tools", tools), ("servers", servers)):
        for name, table in tables.items():
            if not isinstance(table, dict):
                raise PolicyError(f"{path}: [{kind}.{name}]: must be a table")
    return tools, servers


def rule_from_table(tool: str, table: Mapping[str, Any], *, source: str, where: str = "") -> PolicyRule:
    """One tool's rule from its table (keys in the module docstring); ``source`` names the file.

    Raises:
        PolicyError: unknown keys, wrong types, empty or unknown decisions, unknown condition, a
            bad rights, desk or risk key; the message names the file and ``where`` (default
            ``[tools.<tool>]``).
    """
    where = f"{source}: {where or f'[tools.{tool}]'}"
    unknown = sorted(set(table) - _RULE_KEYS)
    if unknown:
        raise PolicyError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(_RULE_KEYS)}")
    decisions = table.get("allowed_decisions")
    if not isinstance(decisions, list) or not all(isinstance(d, str) for d in decisions):
        raise PolicyError(f"{where} allowed_decisions: must be a list of strings")
    description = table.get("description", f"Run {tool}")
    condition = table.get("condition")
    if condition is not None and not isinstance(condition, str):
        raise PolicyError(f"{where} condition: must be a string")
    try:
        rights, desk, risk = parse_tool_rights(table), parse_tool_desk(table), parse_tool_risk(table)
    except (RightsPolicyError, DeskPolicyError, RiskPolicyError) as exc:
        raise PolicyError(f"{where} {exc}") from None
    rule = PolicyRule(tool, list(decisions), description, condition, rights, desk, risk)
    try:
        validate_rule(rule, source=source)
    except PolicyError as exc:
        raise PolicyError(str(exc).replace(f"{source}: [tools.{tool}]", where)) from None
    return rule


def load_policy_toml(path: Path | str) -> list[PolicyRule]:
    """Read the built-in tools' rules from a TOML file (format in the module docstring).

    Returns rules in file order; a missing ``description`` becomes ``"Run <tool>"``. Tables of
    MCP tools (``[tools.<server>__<tool>]``) and servers are left to ``hitl_app.agent.mcp.policy``.

    Raises:
        PolicyError: see ``read_policy_tables`` and ``rule_from_table``. The message names the
            file and the table/key.
    """
    tools, _servers = read_policy_tables(path)
    return [rule_from_table(tool, table, source=str(path)) for tool, table in tools.items() if "__" not in tool]


def describe_policy(rules: list[PolicyRule]) -> list[dict[str, Any]]:
    """Plain-data view of ``rules`` (for display/logging): one dict per rule."""
    return [
        {
            "tool": r.tool,
            "allowed_decisions": list(r.allowed_decisions),
            "description": r.description,
            "condition": r.condition,
            "rights": r.rights.describe(), "desk": r.desk.describe(),
        }
        for r in rules
    ]


def rights_by_tool(rules: list[PolicyRule]) -> dict[str, ToolRights]:
    """``{tool: ToolRights}`` for ``rules``; a tool without a rule has ``DEFAULT_RIGHTS``."""
    return {r.tool: r.rights for r in rules}
