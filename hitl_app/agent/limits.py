"""The bounds every demo tool call runs under (time, size, count), as one value.

``ToolLimits`` is built from the app settings (``ToolLimits.from_settings``) by whoever builds the
workspace; the defaults below are the settings' defaults, so tests and scripts that build a
workspace by hand get the same bounds as the app.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolLimits:
    """Bounds of one tool call.

    Attributes:
        sql_timeout_s: seconds one SQL statement may run before it is stopped (``execute_sql``,
            ``read_data``); the tool then answers with a plain "ran longer than" error.
        sql_max_value_bytes: the largest string or blob SQLite may build (``SQLITE_LIMIT_LENGTH``);
            e.g. ``randomblob(10_000_000)`` fails with a plain "larger than" error.
        result_max_bytes: the largest JSON result a SQL tool returns; more rows are cut off and
            the result says so (``"truncated": true`` and a ``"note"``).
        max_rows: the most rows a SQL result shows.
        max_tool_calls_per_message: the most tool calls one model message may start; the rest
            are answered with an error tool message and never run.
        files_max_count: the most files one owner's sandbox may hold.
        files_max_bytes: the most bytes one owner's sandbox may hold.
    """

    sql_timeout_s: float = 5.0
    sql_max_value_bytes: int = 1_000_000
    result_max_bytes: int = 65_536
    max_rows: int = 50
    max_tool_calls_per_message: int = 20
    files_max_count: int = 500
    files_max_bytes: int = 10_000_000

    @classmethod
    def from_settings(cls, settings: Any) -> ToolLimits:
        """Read the ``tool_*`` / ``sql_*`` / ``files_*`` fields of ``hitl_app.settings.Settings``."""
        return cls(
            sql_timeout_s=settings.sql_timeout_s,
            sql_max_value_bytes=settings.sql_max_value_bytes,
            result_max_bytes=settings.tool_result_max_bytes,
            max_tool_calls_per_message=settings.max_tool_calls_per_message,
            files_max_count=settings.files_max_count,
            files_max_bytes=settings.files_max_bytes,
        )
