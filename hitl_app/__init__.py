"""hitl_app: a Reflex chat app for a tool-using LangChain agent with human-in-the-loop review."""
