"""The rooms of ``hitl_app/ui/``, checked on the source (AST, no imports of the app).

States live in ``ui/state/`` (test-only ones in ``ui/testing/``), pages in ``ui/pages/``, parts in
``ui/components/``; at most five modules sit at the top of ``ui/``. The import map inside ``ui/``
has no circle, no import of the app object (``hitl_app.hitl_app``) and no import hidden in a
function or under ``TYPE_CHECKING`` (the way a circle used to be kept open). No state module
reaches into another state's private members: sibling states talk through module-level doors.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from tests.unit.test_architecture import circles

ROOT = Path(__file__).resolve().parents[3]
UI = ROOT / "hitl_app" / "ui"


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, tuple[Path, ast.Module]]:
    """Dotted name -> (path, parsed source) of every module under ``hitl_app/ui``."""
    return {_name(p): (p, ast.parse(p.read_text())) for p in sorted(UI.rglob("*.py"))}


def _imports(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    """Every ``hitl_app`` module a module imports, anywhere in it, with the import node."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("hitl_app"):
            found += [(f"{node.module}.{a.name}", node) for a in node.names] + [(node.module, node)]
        elif isinstance(node, ast.Import):
            found += [(a.name, node) for a in node.names if a.name.startswith("hitl_app")]
    return found


def _edges() -> dict[str, set[str]]:
    mods = modules()
    edges: dict[str, set[str]] = {}
    for name, (_, tree) in mods.items():
        targets = set()
        for target, _node in _imports(tree):
            parts = target.split(".")
            targets |= {".".join(parts[:i]) for i in range(3, len(parts) + 1) if ".".join(parts[:i]) in mods}
        edges[name] = targets - {name}
    return edges


def test_at_most_five_modules_at_the_top_of_ui():
    top = sorted(p.name for p in UI.glob("*.py"))
    assert len(top) <= 5, top


def test_states_live_in_the_state_room_and_pages_in_the_pages_room():
    """A module that defines an ``rx.State`` (or a state mixin) is in ``ui/state/`` or ``ui/testing/``;
    a module that defines a page (a ``*_page`` function) is in ``ui/pages/`` or ``ui/testing/``."""
    misplaced = []
    for name, (path, tree) in modules().items():
        room = path.relative_to(UI).parts[0]
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(b) in ("rx.State", "SessionState") or ast.unparse(b).endswith(("State", "Mixin"))
                for b in node.bases
            ) and room not in ("state", "testing"):
                misplaced.append(f"{name}.{node.name} (a state)")
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_page") and room not in ("pages", "testing"):
                misplaced.append(f"{name}.{node.name} (a page)")
    assert misplaced == []


def test_no_circle_in_ui():
    """No ui/ module imports itself back (the circle finder is the architecture test's)."""
    assert circles(_edges()) == []


def test_no_hidden_imports_and_no_arrow_up_to_the_app():
    """Every ``hitl_app`` import in ``ui/`` sits at module level, not under ``TYPE_CHECKING``,
    and none imports the app module."""
    found = []
    for name, (_, tree) in modules().items():
        top = {id(n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)}
        for target, node in _imports(tree):
            if target.startswith("hitl_app.hitl_app"):
                found.append(f"{name}: imports the app ({target})")
            elif id(node) not in top and target.startswith("hitl_app.ui"):
                found.append(f"{name}:{node.lineno}: a hidden import of {target}")
    assert found == []


REACH_IN = re.compile(r"(chat|review|desk)\._[a-z]|\)\._[a-z]")


def test_no_state_reaches_into_another_states_private_members():
    found = [
        f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
        for path, _ in modules().values()
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if REACH_IN.search(line)
    ]
    assert found == []
