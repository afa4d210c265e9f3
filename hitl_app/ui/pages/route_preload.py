"""A build step: the page served for a thread URL preloads the thread page's own modules.

Reflex prerenders each static page with ``<link rel="modulepreload">`` for its route's modules, but a
thread URL (``/thread/<id>``, a dynamic route) is answered with the build's SPA fallback page
(``__spa-fallback.html``, copied to ``404.html``), which preloads only the root's. The thread page's
own ~14 modules were then fetched only after the app's code had run and React Router had matched the
route: a second round of requests on every opened thread (issue 23: opening a thread). After the
production build (Reflex's ``post_build`` hook, before the fallback is copied and compressed) this
adds the missing preloads for the routes named, from React Router's build manifest
(``window.__reactRouterManifest`` in ``/assets/manifest-<hash>.js``: per route ``module``, ``imports``
and ``css``).
"""

# Tested by: tests/unit/ui/test_route_preload.py; tests/integration/app/test_http_hardening.py - the served page

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from reflex_base.plugins.base import Plugin

FALLBACK_PAGE = "__spa-fallback.html"
"""The page React Router's build writes for the routes it did not prerender (Reflex serves it for them)."""
THREAD_ROUTE = "thread/:thread_id"
"""The thread page's path in the manifest (``hitl_app.py``: ``/thread/[thread_id]``)."""
_MANIFEST = re.compile(r'href="(/assets/manifest-[A-Za-z0-9_-]+\.js)"')


def route_assets(manifest: dict[str, Any], paths: Iterable[str]) -> tuple[list[str], list[str]]:
    """The module URLs (each route's ``module`` and ``imports``) and the stylesheet URLs (``css``) of the
    manifest's routes whose ``path`` is one of ``paths``, in order, each once."""
    wanted = set(paths)
    modules: dict[str, None] = {}
    styles: dict[str, None] = {}
    for route in manifest.get("routes", {}).values():
        if route.get("path") in wanted:
            modules.update(dict.fromkeys([route["module"], *route.get("imports", [])]))
            styles.update(dict.fromkeys(route.get("css", [])))
    return list(modules), list(styles)


def preload_routes(static_dir: Path, paths: Iterable[str] = (THREAD_ROUTE,)) -> int:
    """Add to ``static_dir``'s fallback page a ``modulepreload`` for each module of the routes ``paths`` it does
    not load yet, and a style ``preload`` for their stylesheets; returns how many links it added (0 when the
    build has no fallback page or no manifest: nothing to do).

    Raises ValueError when the manifest cannot be read as React Router writes it.
    """
    page = static_dir / FALLBACK_PAGE
    if not page.is_file():
        return 0
    html = page.read_text(encoding="utf-8")
    found = _MANIFEST.search(html)
    if found is None or not (static_dir / found.group(1).lstrip("/")).is_file():
        return 0
    text = (static_dir / found.group(1).lstrip("/")).read_text(encoding="utf-8")
    try:
        manifest, _ = json.JSONDecoder().raw_decode(text, text.index("{"))
    except ValueError as exc:
        raise ValueError(f"{found.group(1)} is not React Router's manifest: {exc}") from exc
    modules, styles = route_assets(manifest, paths)
    links = [f'<link rel="modulepreload" href="{url}"/>' for url in modules if f'"{url}"' not in html]
    links += [f'<link rel="preload" as="style" href="{url}"/>' for url in styles if f'"{url}"' not in html]
    if links and "</head>" in html:
        page.write_text(html.replace("</head>", "".join(links) + "</head>", 1), encoding="utf-8")
        return len(links)
    return 0


@dataclasses.dataclass
class PreloadRoutes(Plugin):
    """Reflex plugin (``rxconfig.py``): after the production build, ``preload_routes(static_dir, paths)``."""

    paths: tuple[str, ...] = (THREAD_ROUTE,)

    def post_build(self, **context: Any) -> None:
        """Reflex's hook after ``vite build`` (``context["static_dir"]``: the built pages)."""
        preload_routes(Path(context["static_dir"]), self.paths)
