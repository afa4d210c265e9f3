"""Test-only pages, states and routes: imported only when ``HITL_TEST_HOOKS=1`` (``hitl_app.hitl_app``)."""
