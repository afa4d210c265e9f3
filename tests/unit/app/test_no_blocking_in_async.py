"""No async code in hitl_app calls a synchronous graph, checkpointer or database API.

One blocking call inside an ``async def`` freezes every tab served by that worker for as long as it
blocks (the whole event loop waits). LangGraph offers a sync and an async twin of each method
(``get_state``/``aget_state``, ``invoke``/``ainvoke``, a saver's ``put``/``aput``, ...); the sync
ones are easy to call by mistake. This test walks the syntax tree of every module and refuses, in
the body of an ``async def`` (nested plain functions and lambdas excluded: those are what one
hands to ``asyncio.to_thread``), any call to such a method that is not awaited, plus the other
blocking calls the app could make there (``time.sleep``, a sync SQLModel ``Session``, a
``sqlite3``/app SQLite connection).
"""

from __future__ import annotations

import ast

from tests.helpers.paths import ROOT

SYNC_GRAPH_METHODS = {
    "get_state", "get_state_history", "update_state", "bulk_update_state", "invoke", "batch", "stream",
    "put", "put_writes", "get", "get_tuple", "list", "delete_thread", "setup",
}
"""Sync methods of a compiled graph (Pregel) and of a checkpoint saver; each has an ``a``-twin."""
RECEIVER_HINTS = ("graph", "agent", "saver", "checkpointer", "pregel", "runnable", "model")
"""Receiver names that denote a graph, saver or model (``self.graph``, ``saver``, ``get_agent()``)."""
BLOCKING_CALLS = {"time.sleep", "Session", "sqlite3.connect", "app_sqlite.connect", "sqlite.connect"}


def _called_name(call: ast.Call) -> tuple[str, str]:
    """(receiver text, method or function name) of a call; receiver "" for a bare name."""
    fn = call.func
    if isinstance(fn, ast.Attribute):
        return ast.unparse(fn.value), fn.attr
    if isinstance(fn, ast.Name):
        return "", fn.id
    return "", ""


def blocking_calls_in_async(source: str, filename: str = "<src>") -> list[str]:
    """Lines ``file:line: call`` of blocking calls directly inside ``async def`` bodies of ``source``."""
    found: list[str] = []

    def visit_async_body(node: ast.AST, awaited: set[int]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.Lambda, ast.AsyncFunctionDef, ast.ClassDef)):
                continue  # nested sync code runs elsewhere; nested async defs are visited on their own
            if isinstance(child, ast.Await) and isinstance(child.value, ast.Call):
                awaited.add(id(child.value))
            if isinstance(child, ast.Call) and id(child) not in awaited:
                receiver, name = _called_name(child)
                dotted = f"{receiver}.{name}" if receiver else name
                graphish = any(h in receiver.lower() for h in RECEIVER_HINTS)
                if (name in SYNC_GRAPH_METHODS and graphish) or dotted in BLOCKING_CALLS:
                    found.append(f"{filename}:{child.lineno}: {ast.unparse(child)[:100]}")
            visit_async_body(child, awaited)

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.AsyncFunctionDef):
            visit_async_body(node, set())
    return found


def test_the_checker_finds_sync_graph_saver_and_database_calls_in_async_code():
    bad = '''
async def load(self, tid):
    snap = self.graph.get_state({"configurable": {"thread_id": tid}})
    self.graph.update_state(cfg, {"messages": []})
    for chunk in get_agent().stream(inp, cfg):
        pass
    saver.put(cfg, cp, md, {})
    self.checkpointer.put_writes(cfg, [], "t")
    time.sleep(1)
    with Session(engine) as s:
        pass
'''
    good = '''
async def load(self, tid):
    snap = await self.graph.aget_state(cfg)
    other = await self.get_state(ReviewState)
    rows = await asyncio.to_thread(lambda: saver.list(cfg))
    def in_thread():
        return self.graph.get_state(cfg)
    await asyncio.to_thread(in_thread)
    await queue.put(item)
def sync_path():
    graph.invoke(inp)
'''
    assert len(blocking_calls_in_async(bad)) == 7
    assert blocking_calls_in_async(good) == []


def test_no_async_code_in_the_app_calls_a_blocking_graph_saver_or_database_api():
    found: list[str] = []
    for path in sorted((ROOT / "hitl_app").rglob("*.py")):
        found += blocking_calls_in_async(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())
    assert not found, "blocking calls inside async def (use the a-twin or asyncio.to_thread):\n" + "\n".join(found)
