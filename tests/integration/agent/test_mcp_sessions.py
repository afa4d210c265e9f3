"""MCP servers live for the app's life, against real servers on loopback: one stdio process serves
every call of every thread (and of another thread's event loop), a crash mid-call is said plainly
and the next call starts the server afresh, closing ends every process, a server down at start-up
is tried again and shown back, and a server that cannot be reached says why (QA F10)."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import os
import threading
import time
from collections.abc import Iterator

import pytest

from hitl_app.agent.mcp import client as mcp_client
from hitl_app.agent.mcp.client import connect_servers
from hitl_app.agent.mcp.config import McpServer
from tests.helpers.mcp_servers import FAULTY, stdio_server
from tests.helpers.pairing import assert_pairing
from tests.integration.agent.test_mcp_tools import agent_with, config, say
from tests.integration.conftest import drive

TRUSTED = {"faulty": {"trusted": True}}


async def _gone(pid: int, deadline_s: float = 60.0) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        await asyncio.sleep(0.05)
    return False


def _pid_in(text: str) -> int:
    """The process id in the demo model's "Ran faulty__pid: 1787." line."""
    return int(text.rsplit(":", 1)[-1].strip().rstrip("."))


async def test_one_process_serves_every_call_is_restarted_after_a_crash_and_ends_with_the_app(make_agent):
    graph, mcp, _ = await agent_with(make_agent, [stdio_server("faulty", FAULTY)], server_tables=TRUSTED, timeout_s=30)
    first, second = config(), config()
    pid = _pid_in((await drive(graph, say("call faulty__pid"), first)).texts[-1])
    assert _pid_in((await drive(graph, say("call faulty__pid"), second)).texts[-1]) == pid  # another thread
    assert _pid_in((await drive(graph, say("call faulty__pid"), first)).texts[-1]) == pid
    assert mcp.statuses["faulty"].live() == "running"

    crashed = await drive(graph, say("call faulty__crash"), first)
    assert ("MCP server faulty failed during the call: its process exited or closed its output. The call may or "
            "may not have done its work; the server is started afresh for the next call") in crashed.texts[-1]
    assert await _gone(pid)
    again = _pid_in((await drive(graph, say("call faulty__pid"), second)).texts[-1])
    assert again != pid
    assert mcp.statuses["faulty"].error == ""
    assert mcp.statuses["faulty"].live() == "running; started 2 times (restarted after failures)"
    assert_pairing((await graph.aget_state(first)).values["messages"])

    await mcp.aclose()  # what the app does at shutdown
    assert await _gone(again), "the server process outlived the app"


async def test_a_call_from_another_threads_event_loop_uses_the_same_process():
    mcp = await connect_servers([stdio_server("faulty", FAULTY)], timeout_s=30, max_result_chars=10_000)
    try:
        [tool] = [t for t in mcp.tools if t.name == "faulty__pid"]
        here = await tool.ainvoke({})
        there = await asyncio.to_thread(asyncio.run, tool.ainvoke({}))  # another thread, its own loop
        assert here[0]["text"] == there[0]["text"]  # type: ignore[index]
        assert mcp.statuses["faulty"].sessions is not None and mcp.statuses["faulty"].sessions.opened == 1
    finally:
        await mcp.aclose()


async def test_a_server_down_at_start_is_tried_again_and_shown_back(tmp_path, monkeypatch):
    switch = tmp_path / "down"
    switch.write_text("", encoding="utf-8")
    monkeypatch.setattr(mcp_client, "RETRY_S", (0.2,))
    mcp = await connect_servers([stdio_server("faulty", FAULTY, FAULTY_DOWN_WHILE=str(switch))], timeout_s=30,
                                max_result_chars=10_000)
    try:
        status = mcp.statuses["faulty"]
        assert not status.connected
        assert status.error == ("the process exited during start-up (it closed its output); its last stderr line: "
                                "cannot start: *** exists")  # the env's values are masked like secrets
        mcp.retry_down(30)
        assert status.live().startswith("not answering; next try in")
        switch.unlink()
        end = time.monotonic() + 120
        while not status.back and time.monotonic() < end:
            await asyncio.sleep(0.1)
        assert status.back and status.error == ""
        assert status.live() == "answering again; its tools join the agent at the next start"
    finally:
        await mcp.aclose()


@contextlib.contextmanager
def _answering(status: int) -> Iterator[str]:
    """A loopback HTTP server that answers every request with ``status``; yields its /mcp URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_DELETE = _answer

        def log_message(self, *_: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("case", ["missing command", "http 401", "refused"])
async def test_a_server_that_cannot_be_reached_says_why(case):
    with _answering(401) as url:
        servers = {
            "missing command": McpServer("gone", "stdio", command="hitl-no-such-mcp-server", args=("--x",)),
            "http 401": McpServer("web", "streamable_http", url=url, headers={"Authorization": "Bearer s3cr3t-token"},
                                  secrets=("s3cr3t-token",)),
            "refused": McpServer("web", "streamable_http", url="http://127.0.0.1:9/mcp"),
        }
        server = servers[case]
        mcp = await connect_servers([server], timeout_s=30, max_result_chars=10_000)
        await mcp.aclose()
    error = mcp.statuses[server.name].error
    expected = {
        "missing command": "could not start: command not found: hitl-no-such-mcp-server",
        "http 401": f"could not start: HTTP 401 Unauthorized from {url.removeprefix('http://').join(['http://', ''])}",
        "refused": "could not start: could not connect to http://127.0.0.1:9/mcp",
    }[case]
    assert error == expected
    assert "s3cr3t" not in error
