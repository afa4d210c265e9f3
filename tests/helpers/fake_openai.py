"""A small, deterministic OpenAI-compatible Chat Completions server on 127.0.0.1 (aiohttp).

It speaks the streaming protocol the real ``openai`` client (and so ``langchain-openai``) reads:
``POST /v1/chat/completions`` with ``"stream": true`` answers ``text/event-stream`` lines
``data: {chat.completion.chunk}``: ``choices[0].delta.content`` pieces, streamed tool calls
(``delta.tool_calls[i]`` with ``index``, then ``id`` + ``function.name``, then ``function.arguments``
in several pieces), a final chunk with ``finish_reason`` (``"tool_calls"`` or ``"stop"``), a usage
chunk when ``stream_options.include_usage`` is set, then ``data: [DONE]``. Non-streaming requests
get one ``chat.completion`` object with the same content.

Behaviour (deterministic, from the conversation it is sent):
- last message is a tool result: streams ``"Done: <tool result>"`` and stops;
- last user message asks to email someone (``email bob@example.com ...``) and the request offers a
  ``send_email`` tool: streams ``"I will email bob@example.com now."`` then one ``send_email`` call
  with ``{"to", "subject", "body"}``;
- ``wait <N> seconds`` with a ``slow_task`` tool offered: one ``slow_task(seconds=N)`` call;
- ``stream <N> words``: streams N words (one chunk each, ``delay`` apart: a reply to press Stop in);
- otherwise: streams ``"You said: <text>"``.

Like the real API, a history in which an assistant message's ``tool_calls`` are not each answered
by a tool message before the next non-tool message is refused with HTTP 400
(``invalid_request_error``, "An assistant message with 'tool_calls' must be followed by tool
messages responding to each 'tool_call_id'. ..."); ``refused`` lists the refused requests.

Failures, for provider-error tests: ``POST /control`` with ``{"fail": "429"|"500"|"drop", "times": n}``
makes the next ``n`` completions fail that way (``drop`` streams a few words and then closes the
connection without a final chunk); ``{"reset": true}`` clears it. ``GET /control`` returns the
request count and the queued failures. The same failures can be triggered by the magic words
``[fail:429]``, ``[fail:500]``, ``[fail:drop]`` in the last user message (every time).

Use ``FakeOpenAI().start()`` (runs the server in a thread with its own loop; ``.url`` is the base
URL to put in ``OPENAI_BASE_URL``, ``.stop()`` ends it), or ``python -m tests.helpers.fake_openai PORT``.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
import time
import uuid
from typing import Any

from aiohttp import web

EMAIL_RE = re.compile(r"\bemail\s+([\w.+-]+@[\w-]+(?:\.[\w-]+)+)(.*)", re.IGNORECASE | re.DOTALL)
MAGIC_RE = re.compile(r"\[fail:(429|500|drop)\]")
WAIT_RE = re.compile(r"^wait\s+(\d+(?:\.\d+)?)\s+sec(?:ond)?s?\W*$", re.IGNORECASE)
STREAM_RE = re.compile(r"^stream\s+(\d+)\s+words?\W*$", re.IGNORECASE)
UNPAIRED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: {ids}"
)


def unpaired_tool_calls(messages: list[dict[str, Any]]) -> tuple[int, list[str]] | None:
    """(index of the assistant message, its unanswered tool call ids) for the first broken pair.

    The real API's rule: the messages right after an assistant message with ``tool_calls`` must be
    tool messages answering every one of its ids. Returns None when the history is paired.
    """
    for i, message in enumerate(messages):
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        ids = [tc.get("id") for tc in message["tool_calls"]]
        answered = set()
        for follower in messages[i + 1 :]:
            if follower.get("role") != "tool":
                break
            answered.add(follower.get("tool_call_id"))
        missing = [x for x in ids if x not in answered]
        if missing:
            return i, missing
    return None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _words(text: str) -> list[str]:
    """Split ``text`` into stream pieces that join back to exactly ``text``."""
    return re.findall(r"\S+\s*|\s+", text) or [text]


def forget_cached_openai_clients() -> None:
    """Clear langchain-openai's cached default httpx clients (see ``FakeOpenAI.start``)."""
    from langchain_openai.chat_models import _client_utils

    _client_utils._cached_async_httpx_client.cache_clear()
    _client_utils._cached_sync_httpx_client.cache_clear()


class FakeOpenAI:
    """The fake provider; see the module docstring.

    Args:
        port: TCP port on 127.0.0.1 (0 = a free one, read ``.port`` after ``start()``).
        delay: seconds between streamed chunks (small, so several websocket flushes happen).
    """

    def __init__(self, port: int = 0, delay: float = 0.02):
        self.port = port
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self.refused: list[dict[str, Any]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL for ``OPENAI_BASE_URL``, e.g. ``http://127.0.0.1:5123/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # ------------------------------------------------------------------ control (thread-safe)
    def fail_next(self, kind: str, times: int = 1) -> None:
        """Make the next ``times`` completions fail with ``kind`` (``429``, ``500`` or ``drop``)."""
        assert kind in ("429", "500", "drop"), kind
        self.failures.extend([kind] * times)

    def reset(self) -> None:
        """Forget queued failures."""
        self.failures.clear()

    # ------------------------------------------------------------------ server
    def app(self) -> web.Application:
        """The aiohttp application (routes ``/v1/chat/completions``, ``/v1/models``, ``/control``)."""
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/control", self._control_post)
        app.router.add_get("/control", self._control_get)
        return app

    def start(self) -> FakeOpenAI:
        """Serve in a daemon thread; returns when the port is listening.

        Also forgets langchain-openai's process-wide cached httpx clients (``lru_cache`` keyed by
        base URL in ``langchain_openai.chat_models._client_utils``): each test runs on its own
        event loop, and when the OS hands a later server the same port, the cached client would
        reuse connections bound to an earlier, closed loop ("Event loop is closed"). The app
        itself runs one loop per process, so only tests meet this.
        """
        forget_cached_openai_clients()
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            self._runner = web.AppRunner(self.app(), access_log=None)
            self._loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", self.port)
            self._loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="fake-openai", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake OpenAI server did not start")
        return self

    def stop(self) -> None:
        """Stop the server thread."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

    async def _control_post(self, request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("reset"):
            self.reset()
        if body.get("fail"):
            self.fail_next(str(body["fail"]), int(body.get("times", 1)))
        return web.json_response({"failures": list(self.failures)})

    async def _control_get(self, request: web.Request) -> web.Response:
        return web.json_response({"requests": len(self.requests), "failures": list(self.failures)})

    # ------------------------------------------------------------------ behaviour
    def plan(self, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        """(text, tool calls) the assistant answers to the request ``body``."""
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        if last.get("role") == "tool":
            return f"Done: {_text_of(last.get('content'))}", []
        user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
        text = _text_of(user.get("content")).strip()
        tools = {t.get("function", {}).get("name") for t in body.get("tools") or []}
        wait = WAIT_RE.match(text)
        if wait and "slow_task" in tools:
            seconds = float(wait.group(1))
            args = {"seconds": int(seconds) if seconds.is_integer() else seconds}
            return "", [{"id": f"call_{uuid.uuid4().hex[:12]}", "name": "slow_task", "arguments": json.dumps(args)}]
        stream = STREAM_RE.match(text)
        if stream:
            return " ".join(f"w{n}" for n in range(1, int(stream.group(1)) + 1)), []
        match = EMAIL_RE.search(text)
        if match and "send_email" in tools:
            to = match.group(1)
            rest = match.group(2).strip(" :,.") or "hello"
            subject, _, mail_body = rest.partition(":")
            args = {"to": to, "subject": subject.strip()[:80] or "hello", "body": (mail_body or subject).strip()}
            return f"I will email {to} now.", [
                {"id": f"call_{uuid.uuid4().hex[:12]}", "name": "send_email", "arguments": json.dumps(args)}
            ]
        return f"You said: {MAGIC_RE.sub('', text).strip()}", []

    def _failure_for(self, body: dict[str, Any]) -> str | None:
        if self.failures:
            return self.failures.pop(0)
        user = next((m for m in reversed(body.get("messages") or []) if m.get("role") == "user"), {})
        match = MAGIC_RE.search(_text_of(user.get("content")))
        last_is_user = (body.get("messages") or [{}])[-1].get("role") == "user"
        return match.group(1) if match and last_is_user else None

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        broken = unpaired_tool_calls(body.get("messages") or [])
        if broken is not None:
            self.refused.append(body)
            index, missing = broken
            return web.json_response(
                {"error": {"message": UNPAIRED.format(ids=", ".join(missing)), "type": "invalid_request_error",
                           "param": f"messages.[{index}].role", "code": None}},
                status=400,
            )
        failure = self._failure_for(body)
        if failure == "429":
            return web.json_response(
                {
                    "error": {
                        "message": "Rate limit reached for fake-model. Please try again in 1s.", "type": "requests",
                        "code": "rate_limit_exceeded"
                    }
                },
                status=429,
                headers={"retry-after": "0"},
            )
        if failure == "500":
            return web.json_response(
                {
                    "error": {
                        "message": "The server had an error while processing your request.", "type": "server_error", "code": None
                    }
                },
                status=500,
            )
        text, calls = self.plan(body)
        model = body.get("model", "fake-model")
        cid = f"chatcmpl-{uuid.uuid4().hex[:16]}"
        created = int(time.time())
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if calls:
                message["tool_calls"] = [
                    {
                        "id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}
                    } for c in calls
                ]
            return web.json_response(
                {
                    "id": cid, "object": "chat.completion", "created": created, "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
                }
            )

        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)

        async def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> None:
            data = {
                "id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra,
            }
            await resp.write(f"data: {json.dumps(data)}\n\n".encode())
            if self.delay:
                await asyncio.sleep(self.delay)

        await chunk({"role": "assistant", "content": ""})
        pieces = _words(text)
        for n, piece in enumerate(pieces):
            if failure == "drop" and n == min(3, len(pieces) - 1):
                # a dropped stream: the connection closes without a final chunk or [DONE]
                request.transport.close()  # type: ignore[union-attr]
                return resp
            await chunk({"content": piece})
        for i, call in enumerate(calls):
            await chunk(
                {
                    "tool_calls": [
                        {"index": i, "id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": ""}}
                    ]
                }
            )
            args = call["arguments"]
            step = max(1, len(args) // 4)
            for start in range(0, len(args), step):
                await chunk({"tool_calls": [{"index": i, "function": {"arguments": args[start : start + step]}}]})
        await chunk({}, "tool_calls" if calls else "stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            data = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model, "choices": [],
                    "usage": {"prompt_tokens": 10, "completion_tokens": len(pieces), "total_tokens": 10 + len(pieces)}}
            await resp.write(f"data: {json.dumps(data)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


if __name__ == "__main__":  # pragma: no cover - manual use
    server = FakeOpenAI(port=int(sys.argv[1]) if len(sys.argv) > 1 else 0).start()
    print(f"fake OpenAI at {server.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()
