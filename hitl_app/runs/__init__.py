"""Runs: one agent turn from start to end (the run driver, text batching, tool-call pairing, limits, run errors)."""
