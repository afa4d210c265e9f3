"""A webhook receiver on loopback for tests, in a thread: it fails (500), hangs, is down, or
answers 204, as the test sets ``mode``; it records every delivery whose signature checks (with the
example receiver's own ``verify``, ``examples/webhooks/receiver.py``) before answering."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from examples.webhooks.receiver import Refused, verify


@dataclass
class Received:
    """One delivery as it arrived: its event id header, the parsed body, and the mode then."""

    event_id: str
    event: dict[str, Any]
    mode: str


@dataclass
class LoopbackReceiver:
    """Serve on ``127.0.0.1:port`` (``start``/``stop``, again on the same port) with ``secret``."""

    port: int
    secret: str = ""
    mode: str = "ok"  # "ok" (204), "fail" (500), "hang" (answers after hang_s)
    hang_s: float = 5.0
    got: list[Received] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    def start(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    verify(owner.secret, self.headers.get("Hitl-Signature", ""), body)
                except Refused as exc:
                    owner.refused.append(str(exc))
                    return self._answer(400)
                mode = owner.mode
                owner.got.append(Received(self.headers.get("Hitl-Event-Id", ""), json.loads(body), mode))
                if mode == "hang":
                    time.sleep(owner.hang_s)
                return self._answer(500 if mode == "fail" else 204)

            def _answer(self, status: int) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:  # the app gave up waiting and closed the connection
                    pass

            def log_message(self, *args: object) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def ids(self) -> set[str]:
        return {r.event_id for r in self.got}
