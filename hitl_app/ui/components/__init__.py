"""Reflex components: pure functions of state vars, one module per part of the page."""
