"""The house rules the code keeps, checked on the source itself (AST, no imports of the app).

* The arrows: only ``hitl_app/ui/`` and ``hitl_app/hitl_app.py`` import reflex; ``agent/`` imports
  none of ``threads/ runs/ bus/ desk/ reviewers/ ui/``; ``review/`` imports nothing of the app outside ``review/``;
  nothing outside ``ui/`` and ``hitl_app.py`` imports ``hitl_app.ui``.
* ``store/`` imports only ``store/``, ``review/`` (the pure review vocabulary it persists: pending
  reviews, decisions, rights), ``settings`` and ``errors``.
* Size: no file over 400 lines, no function over 60.
* Every module has a test that imports it, or says where it is tested (``# Tested by: <path>``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "hitl_app"
TESTS = ROOT / "tests"
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60
TESTED_BY = re.compile(r"^# Tested by: (?P<paths>.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Module:
    """One module under hitl_app/: its dotted name, path and parsed source."""

    name: str
    path: Path
    source: str
    tree: ast.Module

    @property
    def rel(self) -> str:
        return self.path.relative_to(ROOT).as_posix()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def app_modules() -> tuple[Module, ...]:
    out = []
    for path in sorted(APP.rglob("*.py")):
        source = path.read_text()
        out.append(Module(module_name(path), path, source, ast.parse(source, filename=str(path))))
    return tuple(out)


def imported_names(tree: ast.AST, current: str, is_package: bool) -> set[str]:
    """Every module name an ``import`` anywhere in ``tree`` names (``from a import b`` gives a and a.b)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = current.split(".") if is_package else current.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, base] if base else package)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def imports_of(module: Module) -> set[str]:
    return imported_names(module.tree, module.name, module.path.name == "__init__.py")


def under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def is_reflex(name: str) -> bool:
    top = name.split(".")[0]
    return top == "reflex" or top.startswith("reflex_")


def in_ui_room(module: Module) -> bool:
    return under(module.name, "hitl_app.ui") or module.name == "hitl_app.hitl_app"


APP_ROOMS = ("threads", "runs", "bus", "desk", "reviewers", "ui")
"""The rooms above ``agent/``: it imports none of them."""


def arrow_violations(modules: tuple[Module, ...] = ()) -> list[str]:
    """Every import that turns an arrow around, as ``"<file>: imports <name> (<rule>)"``."""
    found = []
    for module in modules or app_modules():
        for name in sorted(imports_of(module)):
            if is_reflex(name) and not in_ui_room(module):
                found.append(f"{module.rel}: imports {name} (only ui/ and hitl_app.py import reflex)")
            if under(name, "hitl_app.ui") and not in_ui_room(module):
                found.append(f"{module.rel}: imports {name} (only ui/ and hitl_app.py import hitl_app.ui)")
            if under(module.name, "hitl_app.agent") and any(under(name, f"hitl_app.{room}") for room in APP_ROOMS):
                found.append(f"{module.rel}: imports {name} (agent/ imports none of threads/ runs/ bus/ desk/ reviewers/ ui/)")
            if (
                under(module.name, "hitl_app.store")
                and under(name, "hitl_app")
                and not any(under(name, f"hitl_app.{room}") for room in ("store", "review", "settings", "errors"))
                and name != "hitl_app"
            ):
                found.append(f"{module.rel}: imports {name} (store/ imports only store/, review/, settings and errors)")
            if (
                under(module.name, "hitl_app.review")
                and under(name, "hitl_app")
                and not under(name, "hitl_app.review")
                and name != "hitl_app"
            ):
                found.append(f"{module.rel}: imports {name} (review/ imports nothing of the app outside review/)")
    return found


def test_the_arrows_point_one_way():
    assert arrow_violations() == []


def test_an_arrow_turned_around_is_caught():
    """The checker itself: a review module importing the thread service is reported."""
    source = "from hitl_app.threads.service import ThreadService\nimport reflex as rx\n"
    bad = Module("hitl_app.review.bad", APP / "review" / "bad.py", source, ast.parse(source))
    assert arrow_violations((bad,)) == [
        "hitl_app/review/bad.py: imports hitl_app.threads.service (review/ imports nothing of the app outside review/)",
        "hitl_app/review/bad.py: imports hitl_app.threads.service.ThreadService"
        " (review/ imports nothing of the app outside review/)",
        "hitl_app/review/bad.py: imports reflex (only ui/ and hitl_app.py import reflex)",
    ]


def test_relative_imports_resolve_to_the_module_they_name():
    tree = ast.parse("from ..threads import service\nfrom . import draft\n")
    assert imported_names(tree, "hitl_app.review.validate", False) == {
        "hitl_app.threads", "hitl_app.threads.service", "hitl_app.review", "hitl_app.review.draft"
    }


def test_no_file_is_over_400_lines():
    long = [f"{m.rel}: {len(m.source.splitlines())} lines" for m in app_modules() if len(m.source.splitlines()) > MAX_FILE_LINES]
    assert long == []


def test_no_function_is_over_60_lines():
    long = []
    for module in app_modules():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > MAX_FUNCTION_LINES:
                    long.append(f"{module.rel}:{node.lineno} {node.name}: {size} lines")
    assert long == []


@cache
def names_imported_by_tests() -> frozenset[str]:
    names: set[str] = set()
    for path in TESTS.rglob("*.py"):
        names |= imported_names(ast.parse(path.read_text(), filename=str(path)), module_name(path), path.name == "__init__.py")
    return frozenset(names)


def reexported_by_imported_packages(imported: frozenset[str]) -> set[str]:
    """Modules whose names a package re-exports when a test imports from that package
    (``from hitl_app.auth import sign_in`` tests ``hitl_app.auth.sessions``)."""
    found = set()
    for module in app_modules():
        if module.path.name == "__init__.py" and module.name in imported:
            found |= {name for name in imports_of(module) if under(name, module.name)}
    return found


def existing_test_file(path: str) -> bool:
    """``path`` from the repository root, or a test file of that name anywhere under tests/ (tests
    move between folders; their names stay unique)."""
    return (ROOT / path).is_file() or any(TESTS.rglob(Path(path).name))


def has_code(module: Module) -> bool:
    """Anything beyond a docstring (an empty package ``__init__`` has nothing to test)."""
    body = module.tree.body
    return len(body) > 1 or (len(body) == 1 and not isinstance(body[0], ast.Expr))


def untested_modules() -> list[str]:
    """Modules no test imports (a package counts when one of its modules is imported) and that do
    not name their tests in a ``# Tested by: <path>[, <path>...] [- why]`` comment."""
    imported = names_imported_by_tests()
    imported |= reexported_by_imported_packages(imported)
    missing = []
    for module in app_modules():
        if not has_code(module) or any(under(name, module.name) for name in imported):
            continue
        match = TESTED_BY.search(module.source)
        if match is None:
            missing.append(f"{module.rel}: no test imports it and it has no '# Tested by: <path>' comment")
            continue
        for path in (p.strip() for p in match["paths"].split(" - ")[0].split(",")):
            if not existing_test_file(path):
                missing.append(f"{module.rel}: '# Tested by: {path}' names a test file that does not exist")
    return missing


def test_every_module_has_a_test():
    assert untested_modules() == []


SERVICE_FREE_ROOMS = ("hitl_app.desk", "hitl_app.bus", "hitl_app.runs", "hitl_app.reviewers")
"""Rooms the thread service composes: they get what they need (a session factory, callables, rights
maps) and never import the service back."""


def test_the_rooms_the_service_composes_never_import_it():
    found = [
        f"{m.rel}: imports {name}"
        for m in app_modules() if any(under(m.name, room) for room in SERVICE_FREE_ROOMS)
        for name in sorted(imports_of(m)) if under(name, "hitl_app.threads.service")
    ]
    assert found == []


def import_map(modules: tuple[Module, ...] = ()) -> dict[str, set[str]]:
    """Module -> the app modules it imports (``from pkg import module`` counts the module, not ``pkg``)."""
    modules = modules or app_modules()
    known = {m.name for m in modules}
    out: dict[str, set[str]] = {}
    for m in modules:
        names: set[str] = set()
        for node in ast.walk(m.tree):
            if isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                found = imported_names(node, m.name, m.path.name == "__init__.py")
                modules_named = found - {min(found, key=len)}
                names |= modules_named if modules_named <= known else found
        out[m.name] = {n for n in names if n in known and n != m.name}
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: each strongly connected set of two or more modules, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while (w := stack.pop()) != v:
                comp.append(w)
            if comp:
                found.append(sorted([v, *comp]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_circles_in_the_import_map():
    """Outside ui/ (whose states and pages the UI's own split untangles) no module imports itself back."""
    by_name = {m.name: m for m in app_modules()}
    outside_ui = [c for c in circles(import_map()) if not all(in_ui_room(by_name[n]) for n in c)]
    assert outside_ui == []


def test_a_circle_is_caught():
    """The checker itself: the desk importing the service that composes it is a circle."""
    graph = {"a.service": {"a.desk"}, "a.desk": {"a.grants"}, "a.grants": {"a.service"}, "a.views": {"a.desk"}}
    assert circles(graph) == [["a.desk", "a.grants", "a.service"]]
