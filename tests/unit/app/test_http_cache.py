"""What a browser may keep (``hitl_app.http_headers``): a content-hashed build file for a year (its 304 says the
same), the API, mail links and sign-in never, everything else asked for again; a route's own ``Cache-Control`` is
kept, and a missing build file or a look-alike path is never kept. Driven through the real middleware around a
plain ASGI app."""

from __future__ import annotations

import asyncio

import pytest

from hitl_app.http_headers import ASK_AGAIN, KEEP_FOR_A_YEAR, NEVER_STORE, SecurityHeaders


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


def test_a_build_files_304_says_the_same_so_the_stored_copy_stays_kept() -> None:
    assert _served("/assets/root-BqE-aM0J.js", status=304)[b"cache-control"] == KEEP_FOR_A_YEAR


@pytest.mark.parametrize("path", ["/", "/audit", "/thread/6f1c", "/live.js", "/favicon.ico", "/assets/logo.svg",
                                  "/thread/assets/x-ABCDEFGH.js", "/assets/sub/x-ABCDEFGH.js"])
def test_pages_head_scripts_and_look_alikes_are_asked_for_again(path: str) -> None:
    assert _served(path)[b"cache-control"] == ASK_AGAIN


@pytest.mark.parametrize("path", ["/api/v1/reviews", "/mail/tok123", "/auth/sign-in", "/api/assets/x-ABCDEFGH.js"])
def test_api_answers_mail_links_and_sign_in_are_never_stored(path: str) -> None:
    assert _served(path)[b"cache-control"] == NEVER_STORE


def test_a_missing_build_file_is_not_kept_and_a_routes_own_value_stays() -> None:
    assert _served("/assets/root-AAAAAAAA.js", status=404)[b"cache-control"] == ASK_AGAIN
    assert _served("/audit", route_headers=[(b"Cache-Control", b"private, max-age=5")])[b"cache-control"] == b"private, max-age=5"
    assert _served("/")[b"x-frame-options"] == b"DENY"  # the security headers are still there
