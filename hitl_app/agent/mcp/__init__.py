"""MCP servers as the built-in agent's tools: the ``HITL_MCP`` file (``config.py``), the tools loaded
through ``langchain-mcp-adapters`` with server-qualified names and bounded calls (``client.py``), and
the review policy from the servers' tool annotations and the policy file (``policy.py``)."""
