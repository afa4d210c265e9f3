"""What a browser may keep (``hitl_app.http_headers``): a content-hashed build file for a year, everything else
asked for again; a route's own ``Cache-Control`` is kept, and a missing build file is never kept. Driven through
the real middleware around a plain ASGI app."""

from __future__ import annotations

import asyncio

import pytest

from hitl_app.http_headers import ASK_AGAIN, KEEP_FOR_A_YEAR, SecurityHeaders


def _served(path: str, status: int = 200, route_headers: list[tuple[bytes, bytes]] | None = None) -> dict[bytes, bytes]:
    async def inner(scope, receive, send):  # noqa: ANN001 - an ASGI app
        await send({"type": "http.response.start", "status": status, "headers": list(route_headers or [])})
        await send({"type": "http.response.body", "body": b"x"})

    sent: list[dict] = []

    async def send(message):  # noqa: ANN001
        sent.append(message)

    async def receive():  # noqa: ANN202
        return {"type": "http.request", "body": b""}

    asyncio.run(SecurityHeaders(inner)({"type": "http", "path": path, "headers": []}, receive, send))
    start = sent[0]
    names = [k.lower() for k, _ in start["headers"]]
    assert names.count(b"cache-control") <= 1, "one Cache-Control"
    return dict(start["headers"])


@pytest.mark.parametrize("path", ["/assets/root-BqE-aM0J.js", "/assets/entry.client-C3HRs_XD.js",
                                  "/assets/__reflex_global_styles-NccINl-w.css", "/assets/manifest-439a99ff.js"])
def test_a_build_file_named_by_its_content_is_kept_for_a_year(path: str) -> None:
    assert _served(path)[b"cache-control"] == KEEP_FOR_A_YEAR


@pytest.mark.parametrize("path", ["/", "/audit", "/thread/6f1c", "/live.js", "/favicon.ico", "/assets/logo.svg",
                                  "/api/v1/reviews"])
def test_pages_head_scripts_and_answers_are_asked_for_again(path: str) -> None:
    assert _served(path)[b"cache-control"] == ASK_AGAIN


def test_a_missing_build_file_is_not_kept_and_a_routes_own_value_stays() -> None:
    assert _served("/assets/root-AAAAAAAA.js", status=404)[b"cache-control"] == ASK_AGAIN
    assert _served("/api/v1/reviews", route_headers=[(b"Cache-Control", b"no-store")])[b"cache-control"] == b"no-store"
    assert _served("/")[b"x-frame-options"] == b"DENY"  # the security headers are still there
