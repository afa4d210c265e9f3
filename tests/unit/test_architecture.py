"""The house rules the code keeps, checked on the source itself (AST, no imports of the app).

* The arrows: only ``hitl_app/ui/`` and ``hitl_app/hitl_app.py`` import reflex; ``agent/`` imports
  neither ``threads/`` nor ``ui/``; ``review/`` imports nothing of the app outside ``review/``;
  nothing outside ``ui/`` and ``hitl_app.py`` imports ``hitl_app.ui``.
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


def arrow_violations(modules: tuple[Module, ...] = ()) -> list[str]:
    """Every import that turns an arrow around, as ``"<file>: imports <name> (<rule>)"``."""
    found = []
    for module in modules or app_modules():
        for name in sorted(imports_of(module)):
            if is_reflex(name) and not in_ui_room(module):
                found.append(f"{module.rel}: imports {name} (only ui/ and hitl_app.py import reflex)")
            if under(name, "hitl_app.ui") and not in_ui_room(module):
                found.append(f"{module.rel}: imports {name} (only ui/ and hitl_app.py import hitl_app.ui)")
            if under(module.name, "hitl_app.agent") and (under(name, "hitl_app.threads") or under(name, "hitl_app.ui")):
                found.append(f"{module.rel}: imports {name} (agent/ imports neither threads/ nor ui/)")
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
