"""The offline demo model: ``phrases`` (text -> ``Plan``), ``summary`` (sentences), ``model``.

Public names: ``DemoChatModel``, ``Plan``, ``HELP_TEXT``, ``MAX_STREAM_WORDS``, ``parse_request``,
``demo_words``, ``summarize_tool_result``, ``code_span``, ``md_escape``.
"""

from hitl_app.agent.demo.model import DemoChatModel
from hitl_app.agent.demo.phrases import HELP_TEXT, MAX_STREAM_WORDS, Plan, demo_words, parse_request
from hitl_app.agent.demo.summary import code_span, md_escape, summarize_tool_result

__all__ = [
    "HELP_TEXT",
    "MAX_STREAM_WORDS",
    "DemoChatModel",
    "Plan",
    "code_span",
    "demo_words",
    "md_escape",
    "parse_request",
    "summarize_tool_result",
]
