"""Benchmark-only: record when the demo model emits each token (wall clock), in the app server.

Put on ``PYTHONPATH`` of the app server by ``bench`` (never by the app). When
``HITL_BENCH_TRACE_DIR`` is set, ``DemoChatModel._astream`` is wrapped so that every content
chunk's ``time.time()`` is kept in memory and written, when the model call ends, to
``<dir>/<thread_id>.<monotonic_ns>.json`` as ``{"thread_id": str, "t": [float seconds, ...],
"t_end": float (the last chunk, e.g. the tool calls), "words": int}``. One list append per token; the file is
written once per model call, after the last token, so the trace does not slow the stream it measures. The thread id comes from
LangGraph's run config (``langgraph.config.get_config()``).

With ``HITL_BENCH_DESK_OFF=1`` the desk is switched off too (``desk_off.py``: section 3's
"desk off" review row).
"""

import os

if os.environ.get("HITL_BENCH_TRACE_DIR"):
    import importlib.abc
    import importlib.machinery
    import sys

    _PATCHES = {}

    def _patch(module) -> None:
        import json
        import time
        from pathlib import Path

        cls = module.DemoChatModel
        original = cls._astream
        out_dir = Path(os.environ["HITL_BENCH_TRACE_DIR"])

        async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
            stamps: list[float] = []
            last = [0.0]
            try:
                from langgraph.config import get_config

                thread_id = str(get_config().get("configurable", {}).get("thread_id", "unknown"))
            except Exception:  # noqa: BLE001 - outside a graph run
                thread_id = "unknown"
            try:
                async for chunk in original(self, messages, stop=stop, run_manager=run_manager, **kwargs):
                    now = time.time()
                    if chunk.message.content:
                        stamps.append(now)
                    last[0] = now
                    yield chunk
            finally:
                if last[0]:
                    out_dir.mkdir(parents=True, exist_ok=True)
                    path = out_dir / f"{thread_id}.{time.monotonic_ns()}.json"
                    path.write_text(json.dumps({"thread_id": thread_id, "t": stamps, "t_end": last[0], "words": len(stamps)}))

        cls._astream = _astream

    _PATCHES["hitl_app.agent.demo.model"] = _patch
    if os.environ.get("HITL_BENCH_DESK_OFF") == "1":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from desk_off import PATCHES as _DESK_OFF

        _PATCHES.update(_DESK_OFF)

    class _Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name not in _PATCHES:
                return None
            sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            sys.meta_path.insert(0, self)
            if spec is None or spec.loader is None:
                return spec
            loader = spec.loader
            exec_module = loader.exec_module

            def exec_and_patch(module):
                exec_module(module)
                _PATCHES[name](module)

            loader.exec_module = exec_and_patch  # type: ignore[method-assign]
            return spec

    sys.meta_path.insert(0, _Finder())
