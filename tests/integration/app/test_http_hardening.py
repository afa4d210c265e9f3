"""Browser hardening of the running app (prod mode, one port): security headers on every HTTP
response, browser error reports that cannot forge or flood the server log, loopback by default."""

from __future__ import annotations

import asyncio
import re
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.app_server import ROOT, AppServer
from tests.helpers.ws_client import ROOT_STATE, WsClient

FRONTEND_EXCEPTION = f"{ROOT_STATE}.reflex___state____frontend_event_exception_state.handle_frontend_exception"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    s = AppServer(tmp_path_factory.mktemp("hardening-app"))
    s.start()
    yield s
    s.stop()


def _get(url: str) -> tuple[int, dict[str, str], str]:
    req = urllib.request.Request(url, headers={"Accept-Encoding": "identity"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read().decode("utf-8", "replace")


def _csp(headers: dict[str, str]) -> dict[str, list[str]]:
    policy = headers.get("content-security-policy", "")
    return {d.split()[0]: d.split()[1:] for d in (p.strip() for p in policy.split(";")) if d}


def _assert_hardened(headers: dict[str, str], what: str) -> None:
    csp = _csp(headers)
    assert csp, f"{what}: no Content-Security-Policy"
    assert csp["default-src"] == ["'self'"], what
    assert "'self'" in csp["script-src"] and "'unsafe-inline'" not in csp["script-src"], what
    assert csp["img-src"] == ["'self'", "data:"], what
    assert csp["connect-src"] == ["'self'"], what
    assert csp["frame-ancestors"] == ["'none'"], what
    assert csp["object-src"] == ["'none'"], what
    assert headers.get("x-content-type-options") == "nosniff", what
    assert headers.get("x-frame-options") == "DENY", what
    assert headers.get("referrer-policy") in ("no-referrer", "same-origin"), what


@pytest.mark.slow  # the module's server builds the pages (~11 s of a test-fast run)
def test_pages_static_files_and_thread_urls_carry_security_headers(server: AppServer):
    status, headers, page = _get(server.url + "/")
    assert status == 200
    _assert_hardened(headers, "/")
    asset = re.search(r'src="(/assets/[^"]+\.js)"|href="(/assets/[^"]+\.(?:js|css))"', page)
    assert asset, "no asset link on the page"
    assert headers.get("cache-control") == "no-cache", "a page is asked for again"
    status, headers, _ = _get(server.url + (asset.group(1) or asset.group(2)))
    assert status == 200
    _assert_hardened(headers, "static asset")
    assert headers.get("cache-control") == "public, max-age=31536000, immutable", "a hashed build file is kept"
    status, headers, thread_page = _get(f"{server.url}/thread/{uuid.uuid4()}")
    assert status == 200
    _assert_hardened(headers, "thread page")
    # the thread page's own modules load with the rest (hitl_app/ui/pages/route_preload.py), not after the app's code ran
    assert re.search(r'<link rel="modulepreload" href="/assets/_thread_[^"]+\.js"/>', thread_page), "no thread module preload"
    status, headers, _ = _get(server.url + "/favicon.ico")
    assert status == 200
    _assert_hardened(headers, "favicon")


@pytest.mark.slow  # the module's server builds the pages (~11 s of a test-fast run)
def test_a_page_written_into_the_static_folder_later_cannot_run_inline_script(server: AppServer):
    """Someone who manages to write an HTML file next to the app's pages (a same-origin page) still
    cannot run a script there: only the build's own inline scripts are allowed."""
    static = Path(server.app_root) / ".web" / "build" / "client"
    (static / "dropped.html").write_text("<html><script>document.title='PWNED'</script></html>", encoding="utf-8")
    status, headers, body = _get(server.url + "/dropped.html")
    assert status == 200 and "PWNED" in body
    import base64
    import hashlib

    digest = base64.b64encode(hashlib.sha256(b"document.title='PWNED'").digest()).decode()
    assert f"'sha256-{digest}'" not in _csp(headers)["script-src"]
    # the build's own inline scripts are allowed (otherwise the app would not hydrate)
    assert any(s.startswith("'sha256-") for s in _csp(headers)["script-src"])


@pytest.mark.slow  # the module's server builds the pages (~11 s of a test-fast run)
def test_a_forged_browser_error_report_leaves_one_short_escaped_log_line(server: AppServer):
    forged = "oops\n2099-01-01 00:00:00,000 INFO hitl_app: hitl_app started FORGED-LINE\n" + "A" * 200_000

    async def report() -> None:
        async with WsClient(server.url) as c:
            await c.hydrate("/")
            await c.wait_for(lambda c: c.root.get("is_hydrated") is True, what="hydrated")
            for _ in range(3):
                await c.emit_raw(
                    {
                        "name": FRONTEND_EXCEPTION, "payload": {"info": forged, "component_stack": "x\ny"},
                        "router_data": {"pathname": "/", "asPath": "/", "query": {}}
                    }
                )
            await c.settle()

    before = server.log_path.stat().st_size
    asyncio.run(report())
    added = server.log_path.read_bytes()[before:].decode("utf-8", "replace")
    lines = [line for line in added.splitlines() if "FORGED-LINE" in line]
    assert len(lines) == 3, added[-2000:]
    assert all("browser error report" in line and "oops\\n2099-01-01" in line for line in lines)
    assert not any(line.startswith("2099-01-01") for line in added.splitlines())
    assert len(added.encode()) < 3 * 3000, f"the log grew by {len(added.encode()):,} bytes"


@pytest.mark.slow  # the module's server builds the pages (~11 s of a test-fast run)
def test_a_flood_of_browser_error_reports_is_rate_limited(server: AppServer):
    async def flood() -> None:
        async with WsClient(server.url) as c:
            await c.hydrate("/")
            await c.wait_for(lambda c: c.root.get("is_hydrated") is True, what="hydrated")
            for i in range(200):
                await c.emit_raw(
                    {
                        "name": FRONTEND_EXCEPTION, "payload": {"info": f"FLOOD-{i}", "component_stack": ""},
                        "router_data": {"pathname": "/", "asPath": "/", "query": {}}
                    }
                )
            await c.settle()

    before = server.log_path.stat().st_size
    asyncio.run(flood())
    added = server.log_path.read_bytes()[before:].decode("utf-8", "replace")
    logged = len(re.findall(r"FLOOD-\d+", added))
    assert 0 < logged <= 20, f"{logged} of 200 reports were logged"


@pytest.mark.parametrize("host, expected", [(None, "--backend-host 127.0.0.1"), ("0.0.0.0", "--backend-host 0.0.0.0")])
def test_make_run_listens_on_loopback_unless_a_host_is_given(host: str | None, expected: str):
    args = ["make", "-n", "-o", "setup", "run"] + ([f"HOST={host}"] if host else [])
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert expected in out, out


def _with_origin(url: str, origin: str, method: str = "GET") -> dict[str, str]:
    headers = {"Origin": origin, "Accept-Encoding": "identity"}
    if method == "OPTIONS":
        headers |= {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
    req = urllib.request.Request(url, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return {k.lower(): v for k, v in r.headers.items()}
    except urllib.error.HTTPError as exc:  # a refused preflight is a 400
        return {k.lower(): v for k, v in exc.headers.items()}


async def _socket_accepts(server: AppServer, origin: str) -> bool:
    """Whether the app's websocket accepts a connection whose handshake carries ``origin``."""
    import socketio

    sio = socketio.AsyncClient(reconnection=False)
    try:
        await sio.connect(
            f"{server.url}/_event/?token={uuid.uuid4()}", transports=["websocket"], namespaces=["/_event"],
            socketio_path="/_event", headers={"Origin": origin}, wait_timeout=10,
        )
    except socketio.exceptions.ConnectionError:
        return False
    await sio.disconnect()
    return True


@pytest.mark.slow  # the module's server builds the pages (~11 s of a test-fast run)
def test_cross_origin_requests_get_no_cors_grant_and_no_websocket(server: AppServer):
    """Security review L8(d): no ``Access-Control-Allow-Origin: *``; only the app's own origins
    (``HITL_ALLOWED_ORIGINS``, by default the address it serves on) may read it or open its websocket."""
    foreign, own = "http://evil.example", server.url
    for path, method in (("/ping", "GET"), ("/_upload", "OPTIONS"), ("/", "GET")):
        headers = _with_origin(server.url + path, foreign, method)
        assert "access-control-allow-origin" not in headers, (path, method, headers.get("access-control-allow-origin"))
    assert _with_origin(server.url + "/ping", own).get("access-control-allow-origin") == own
    assert _with_origin(server.url + "/_upload", own, "OPTIONS").get("access-control-allow-origin") == own
    assert asyncio.run(_socket_accepts(server, own)), "the app's own page could not open the websocket"
    assert not asyncio.run(_socket_accepts(server, foreign)), "a foreign page opened the websocket"
