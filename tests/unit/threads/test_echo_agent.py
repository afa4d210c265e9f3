"""The echo agent fixture (used by tests/e2e/test_browser_hardening.py through HITL_AGENT) imports and echoes.

A rename in hitl_app.agent once broke it silently: only the browser test, run last, noticed.
"""

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from tests.fixtures.echo_agent import make_agent


async def test_echo_agent_replies_with_the_users_markdown_verbatim():
    agent = make_agent(InMemorySaver())
    text = "look ![x](http://203.0.113.9/x.png)"
    out = await agent.ainvoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": "t"}})
    reply = [m for m in out["messages"] if isinstance(m, AIMessage)][-1]
    assert reply.text.strip() == text
