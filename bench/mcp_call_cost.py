"""The cost of one MCP tool call: a session per call (the adapter's way without a session: a stdio
process started and ended for every call, the app's way before issue 20's second round) against
the app's live sessions (``hitl_app.agent.mcp.sessions``: one process for the app's life).

    .venv/bin/python -m bench.mcp_call_cost [--calls 30]

Calls the example notes server's read-only ``search_notes`` over stdio ``--calls`` times each way,
one after another, and prints the median and p95 wall time per call (ms) and the ratio. Nothing
is asserted: timing belongs here, not in the tests.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from langchain_mcp_adapters.tools import load_mcp_tools

from hitl_app.agent.mcp.client import connect_servers
from hitl_app.agent.mcp.config import McpServer

NOTES = Path(__file__).resolve().parents[1] / "examples" / "mcp" / "notes_server.py"


async def _time_calls(tool, calls: int) -> list[float]:
    times: list[float] = []
    for _ in range(calls):
        start = time.perf_counter()
        await tool.ainvoke({"query": "milk"})
        times.append((time.perf_counter() - start) * 1000)
    return times


def _row(label: str, times: list[float]) -> str:
    p95 = sorted(times)[max(0, round(len(times) * 0.95) - 1)]
    return f"{label:<22} median {statistics.median(times):8.1f} ms   p95 {p95:8.1f} ms   (n={len(times)})"


async def main(calls: int) -> None:
    """Measure both ways and print them (see the module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        server = McpServer("notes", "stdio", command=sys.executable, args=(str(NOTES),),
                           env={"NOTES_FILE": str(Path(tmp) / "notes.json")})
        per_call = {t.name: t for t in await load_mcp_tools(None, connection=server.connection())}  # type: ignore[arg-type]
        before = await _time_calls(per_call["search_notes"], calls)
        mcp = await connect_servers([server], timeout_s=60, max_result_chars=65_536)
        try:
            live = {t.name: t for t in mcp.tools}
            after = await _time_calls(live["notes__search_notes"], calls)
        finally:
            await mcp.aclose()
    print(_row("session per call", before))
    print(_row("live session", after))
    print(f"ratio (median before / after): {statistics.median(before) / statistics.median(after):.0f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=30)
    asyncio.run(main(parser.parse_args().calls))
