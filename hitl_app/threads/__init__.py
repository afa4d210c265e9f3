"""Threads and runs: the service the UI calls, the run driver, the run bus and the views it returns."""
