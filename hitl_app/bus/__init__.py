"""The run bus: a run's events and review signals between workers (the protocol, in-process and Redis backends)."""
