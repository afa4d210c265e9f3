"""The streaming benchmark: the app against the agent alone, in the same run (issue 5).

``python -m bench`` (``make bench``) / ``python -m bench --smoke`` (``make bench-smoke``, for CI).
See bench/README.md for what each section measures, how, and the targets.
"""
