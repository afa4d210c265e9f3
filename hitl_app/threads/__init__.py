"""Threads: the service the UI calls (what a thread can do) and the views it returns."""
