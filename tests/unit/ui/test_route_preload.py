"""The thread URL's page preloads the thread page's modules (``hitl_app.ui.pages.route_preload``): on a build folder
shaped as React Router writes it (a fallback page, a manifest), each missing module once, the route's stylesheet,
nothing twice, nothing for other routes, and a clear error for a manifest it cannot read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hitl_app.ui.pages.route_preload import THREAD_ROUTE, preload_routes

MANIFEST = {
    "entry": {"module": "/assets/entry.client-AAAAAAAA.js", "imports": []},
    "routes": {
        "root": {"id": "root", "path": "", "module": "/assets/root-BBBBBBBB.js", "imports": ["/assets/react-CCCCCCCC.js"]},
        "routes/[thread].$[thread_id]._index": {
            "id": "routes/[thread].$[thread_id]._index", "path": THREAD_ROUTE, "module": "/assets/_thread_-DDDDDDDD.js",
            "imports": ["/assets/react-CCCCCCCC.js", "/assets/virtuoso-EEEEEEEE.js", "/assets/virtuoso-EEEEEEEE.js"],
            "css": ["/assets/_thread_-FFFFFFFF.css"],
        },
        "routes/audit": {"path": "audit", "module": "/assets/audit-GGGGGGGG.js", "imports": []},
    },
}
PAGE = ('<html><head><link rel="modulepreload" href="/assets/manifest-12345678.js"/>'
        '<link rel="modulepreload" href="/assets/react-CCCCCCCC.js"/></head><body></body></html>')


def _build(tmp_path: Path, manifest_text: str) -> Path:
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "manifest-12345678.js").write_text(manifest_text)
    (tmp_path / "__spa-fallback.html").write_text(PAGE)
    return tmp_path


def test_the_fallback_page_preloads_the_thread_routes_missing_modules_once(tmp_path: Path) -> None:
    build = _build(tmp_path, "window.__reactRouterManifest=" + json.dumps(MANIFEST) + ";")
    assert preload_routes(build) == 3
    html = (build / "__spa-fallback.html").read_text()
    assert html.count('href="/assets/_thread_-DDDDDDDD.js"') == 1 and html.count('href="/assets/virtuoso-EEEEEEEE.js"') == 1
    assert html.count('href="/assets/react-CCCCCCCC.js"') == 1  # already there: not twice
    assert '<link rel="preload" as="style" href="/assets/_thread_-FFFFFFFF.css"/>' in html
    assert "audit-GGGGGGGG" not in html  # another route's modules are not its business
    assert html.index("_thread_-DDDDDDDD") < html.index("</head>")
    assert preload_routes(build) == 0  # a second run adds nothing


def test_no_fallback_page_is_nothing_to_do_and_an_unreadable_manifest_says_so(tmp_path: Path) -> None:
    assert preload_routes(tmp_path) == 0
    build = _build(tmp_path, "window.__reactRouterManifest={not json")
    with pytest.raises(ValueError, match="manifest-12345678.js is not React Router's manifest"):
        preload_routes(build)
