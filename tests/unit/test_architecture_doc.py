"""``docs/architecture.md`` is true: checked on the doc and the source (AST, no imports of the app).

* Every module of ``hitl_app/`` is in the doc: by its path (``runs/run_driver.py``, with or without
  ``hitl_app/``), or by its file name on its folder's line (a bullet or table row that starts with
  the folder, e.g. ``- `ui/state/`: `chat.py`, ...``; a package's ``__init__.py`` needs only the line).
* Every file the doc names exists (a path, or a file name on a folder's line), and every class
  (``ThreadService``) and member of a class (``ThreadService.submit_review``) it names.
* The rooms table holds: a room is a folder of ``hitl_app/`` or a module at its top; each has one
  row; a module imports only its own room and what its row's "imports of the app" column names (a
  room ``store/`` or ``settings.py``, or one module of a room, ``threads/views.py``). An import
  anywhere in a module counts (also inside a function or under ``TYPE_CHECKING``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "hitl_app"
DOC = ROOT / "docs" / "architecture.md"
TOKEN = re.compile(r"`([^`]+)`")
BLOCK_START = re.compile(r"^(#|\||[-*] |\d+\. )")


def app_paths() -> list[str]:
    """Every module of the app as a path relative to ``hitl_app/`` (``runs/run_driver.py``, ``settings.py``)."""
    return sorted(p.relative_to(APP).as_posix() for p in APP.rglob("*.py"))


def folder_of(path: str) -> str:
    """``runs/run_driver.py`` -> ``runs/``; ``settings.py`` -> ``""`` (the top of ``hitl_app/``)."""
    return path.rpartition("/")[0] + "/" if "/" in path else ""


def as_app_path(token: str) -> str | None:
    """A doc token naming a path of the app, relative to ``hitl_app/`` (a folder ends in ``/``;
    ``hitl_app/`` itself is ``""``), or None when it names no path."""
    token = token.strip()
    if token.startswith("hitl_app/"):
        return token[len("hitl_app/"):]
    first = token.split("/")[0]
    if (ROOT / first).is_dir() and not (APP / first).exists():
        return None  # tests/, docs/, bench/, assets/: not the app
    if re.fullmatch(r"[a-z0-9_]+/([a-z0-9_]+/)*([a-z0-9_]+\.py)?", token):
        return token
    return None


def blocks(text: str) -> list[str]:
    """The doc cut into blocks: a heading, a table row, a list item or a paragraph, each with the
    lines that continue it."""
    out: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        if not line.strip() or BLOCK_START.match(line):
            if current:
                out.append("\n".join(current))
            current = [line] if line.strip() else []
        else:
            current.append(line)
    if current:
        out.append("\n".join(current))
    return out


def folder_line(block: str) -> str | None:
    """The folder a list item is the line of: its first token, when that names a folder
    (``- `ui/state/`: ...``); else None."""
    start = re.match(r"[-*] \**`([^`]+)`", block)
    if start is None:
        return None
    path = as_app_path(start[1])
    return path if path is not None and (path == "" or path.endswith("/")) else None


@dataclass(frozen=True)
class DocNames:
    """What the doc names: paths (relative to ``hitl_app/``) and, per folder, the file names on its lines."""

    paths: frozenset[str]
    on_folder_line: dict[str, frozenset[str]]


def doc_names(text: str) -> DocNames:
    paths = {p for t in TOKEN.findall(text) if (p := as_app_path(t)) is not None}
    by_folder: dict[str, set[str]] = {}
    for block in blocks(text):
        folder = folder_line(block)
        if folder is not None:
            names = by_folder.setdefault(folder, set())
            names |= {t for t in TOKEN.findall(block) if re.fullmatch(r"[A-Za-z_]\w*\.py", t)}
    return DocNames(frozenset(paths), {f: frozenset(n) for f, n in by_folder.items()})


def modules_missing_from(text: str, modules: list[str]) -> list[str]:
    """The modules ``text`` names neither by path nor on their folder's line."""
    names = doc_names(text)
    missing = []
    for path in modules:
        folder, name = folder_of(path), path.rpartition("/")[2]
        if path in names.paths:
            continue
        on_line = names.on_folder_line.get(folder)
        if on_line is not None and (name in on_line or name == "__init__.py"):
            continue
        where = f"the `{folder or 'hitl_app/'}` line" if on_line is not None else f"no `{folder or 'hitl_app/'}` line in the doc"
        missing.append(f"hitl_app/{path}: not in docs/architecture.md (not by path; {where}, no `{name}` on it)")
    return missing


def names_that_do_not_exist(text: str) -> list[str]:
    """Files of the app the doc names (paths, or file names on a folder's line) that do not exist,
    and test files it names that do not exist."""
    names = doc_names(text)
    found = [f"`{p}`" for p in sorted(names.paths) if not (APP / p).exists()]
    found += [f"`{f}{n}` (on the `{f or 'hitl_app/'}` line)" for f, ns in sorted(names.on_folder_line.items())
              for n in sorted(ns) if not (APP / f / n).exists()]
    found += [f"`{t}`" for t in sorted(set(TOKEN.findall(text))) if re.fullmatch(r"tests/[\w/.]+", t) and not (ROOT / t).exists()]
    return found


@dataclass(frozen=True)
class Defined:
    """What the app defines: class name -> its members and base names; every module-level name."""

    classes: dict[str, tuple[frozenset[str], tuple[str, ...]]]
    names: frozenset[str]


def defined(sources: dict[str, str]) -> Defined:
    classes: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {}
    names: set[str] = set()
    for source in sources.values():
        for node in ast.parse(source).body:
            names |= _bound(node)
            if isinstance(node, ast.ClassDef):
                members = set().union(*(_bound(n) for n in node.body)) if node.body else set()
                bases = tuple(ast.unparse(b).split(".")[-1].split("[")[0] for b in node.bases)
                old = classes.get(node.name, (frozenset(), ()))
                classes[node.name] = (old[0] | members, old[1] + bases)
    return Defined(classes, frozenset(names))


def _bound(node: ast.stmt) -> set[str]:
    """The names a statement binds at its level (a def, a class, an assignment, an annotated field)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


def has_member(found: Defined, cls: str, member: str, seen: frozenset[str] = frozenset()) -> bool:
    members, bases = found.classes[cls]
    return member in members or any(
        has_member(found, b, member, seen | {cls}) for b in bases if b in found.classes and b not in seen
    )


NOT_THE_APPS = frozenset({"Protocol", "None", "HumanInTheLoopMiddleware"})
"""Names the doc uses that are not the app's (Python's, LangChain's)."""


def code_names_that_do_not_exist(text: str, found: Defined) -> list[str]:
    """Classes (``ThreadService``) and members of the app's classes (``ThreadService.submit_review``)
    the doc names that the app does not define."""
    missing = []
    for token in sorted(set(TOKEN.findall(text))):
        if re.fullmatch(r"[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*", token) and token not in NOT_THE_APPS:
            if token not in found.names:
                missing.append(f"`{token}`: no class or name of that name in hitl_app/")
        elif (m := re.fullmatch(r"([A-Z]\w*)\.(\w+)", token)) and m[1] not in NOT_THE_APPS:
            if m[1] not in found.classes:
                missing.append(f"`{token}`: no class {m[1]} in hitl_app/")
            elif not has_member(found, m[1], m[2]):
                missing.append(f"`{token}`: {m[1]} (and its bases) define no {m[2]}")
    return missing


# ---------------------------------------------------------------- the rooms table


def room_of(path: str) -> str:
    """The room of a module: its top folder (``desk/``) or, at the top of ``hitl_app/``, itself (``runtime.py``)."""
    return path.split("/")[0] + "/" if "/" in path else path


def table_rows(text: str, header: tuple[str, ...]) -> list[tuple[int, list[str]]]:
    """The rows (line number, cells) of the first table whose header starts with ``header`` (lower case)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip().lower() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and tuple(cells[: len(header)]) == header:
            rows = []
            for j in range(i + 2, len(lines)):
                if not lines[j].startswith("|"):
                    break
                rows.append((j + 1, [c.strip() for c in lines[j].strip().strip("|").split("|")]))
            return rows
    raise AssertionError(f"docs/architecture.md has no table with the header {' | '.join(header)}")


@dataclass(frozen=True)
class Rooms:
    """The rooms table: room -> what its row allows it to import (rooms and single modules)."""

    allowed: dict[str, frozenset[str]]
    problems: tuple[str, ...]


def rooms_table(text: str, modules: list[str]) -> Rooms:
    """Read the rooms table (``| room | holds | imports of the app |``) against the app's ``modules``."""
    rooms = {room_of(p) for p in modules if p != "__init__.py"}
    allowed: dict[str, frozenset[str]] = {}
    problems: list[str] = []
    for line_no, cells in table_rows(text, ("room", "holds", "imports of the app")):
        named = [as_app_path(t) or t for t in TOKEN.findall(cells[0])]
        imports = [as_app_path(t) or t for t in TOKEN.findall(cells[2])] if len(cells) > 2 else []
        for room in named:
            if room not in rooms:
                problems.append(f"docs/architecture.md:{line_no}: the row names `{room}`, which is no room of hitl_app/")
            elif room in allowed:
                problems.append(f"docs/architecture.md:{line_no}: a second row for `{room}`")
            else:
                allowed[room] = frozenset(imports)
        for name in imports:
            if name not in rooms and not (APP / name).is_file():
                problems.append(
                    f"docs/architecture.md:{line_no}: `{name}` in the imports column is no room or module of hitl_app/"
                )
    problems += [f"docs/architecture.md: the rooms table has no row for `{r}`" for r in sorted(rooms - set(allowed))]
    return Rooms(allowed, tuple(problems))


def app_imports(path: str, tree: ast.AST) -> list[tuple[int, str]]:
    """(line, dotted name) of every import of ``hitl_app`` anywhere in the module at ``path``."""
    package = ["hitl_app", *path.removesuffix(".py").split("/")][:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package[: len(package) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            found += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return [(line, name) for line, name in found if name.startswith("hitl_app.")]


def target_of(name: str) -> str | None:
    """The app module a dotted import name lands in (``hitl_app.desk.final.final_decisions`` ->
    ``desk/final.py``; a package -> its ``__init__.py``), or None."""
    parts = name.split(".")[1:]
    for k in range(len(parts), 0, -1):
        stem = "/".join(parts[:k])
        if (APP / f"{stem}.py").is_file():
            return f"{stem}.py"
        if (APP / stem / "__init__.py").is_file():
            return f"{stem}/__init__.py"
    return None


def imports_outside_the_table(rooms: Rooms, sources: dict[str, str]) -> list[str]:
    """Every import of a module in ``sources`` (path -> text) that its room's row does not allow."""
    found = []
    seen: set[tuple[str, int, str]] = set()
    for path, source in sorted(sources.items()):
        room = room_of(path)
        if path == "__init__.py" or room not in rooms.allowed:
            continue
        for line, name in app_imports(path, ast.parse(source, filename=path)):
            target = target_of(name)
            if target is None or room_of(target) == room or target == "__init__.py":
                continue
            if room_of(target) in rooms.allowed[room] or target in rooms.allowed[room]:
                continue
            if (path, line, target) not in seen:
                seen.add((path, line, target))
                found.append(
                    f"hitl_app/{path}:{line}: imports {name} ({room_of(target)}), which the rooms table's row for"
                    f" `{room}` does not list under 'imports of the app'"
                )
    return found


@cache
def doc_text() -> str:
    return DOC.read_text()


@cache
def app_sources() -> dict[str, str]:
    return {p: (APP / p).read_text() for p in app_paths()}


# ---------------------------------------------------------------- the tests


def test_every_module_is_in_the_doc():
    assert modules_missing_from(doc_text(), app_paths()) == []


def test_every_file_the_doc_names_exists():
    assert names_that_do_not_exist(doc_text()) == []


def test_every_class_and_method_the_doc_names_exists():
    assert code_names_that_do_not_exist(doc_text(), defined(app_sources())) == []


def test_a_renamed_method_is_caught():
    """The checker itself: a method found through a base class passes; a renamed one is reported."""
    found = defined({"a.py": "class Mixin:\n    def watch(self): ...\nclass Chat(Mixin):\n    def send(self): ...\n"})
    assert code_names_that_do_not_exist("`Chat.send`, `Chat.watch`, `Mixin`", found) == []
    assert code_names_that_do_not_exist("`Chat.submit` and `Review`", found) == [
        "`Chat.submit`: Chat (and its bases) define no submit",
        "`Review`: no class or name of that name in hitl_app/",
    ]


def test_the_rooms_table_names_every_room_once():
    assert rooms_table(doc_text(), app_paths()).problems == ()


def test_every_import_is_allowed_by_the_rooms_table():
    assert imports_outside_the_table(rooms_table(doc_text(), app_paths()), app_sources()) == []


def test_a_module_left_out_of_the_doc_is_caught():
    """The checker itself: a module on neither its folder's line nor by path is reported; by path it is not."""
    text = "- `runs/`: `run_driver.py` (the driver), `__init__.py`.\n"
    modules = ["runs/__init__.py", "runs/run_driver.py", "runs/pairing.py"]
    assert modules_missing_from(text, modules) == [
        "hitl_app/runs/pairing.py: not in docs/architecture.md (not by path; the `runs/` line, no `pairing.py` on it)"
    ]
    assert modules_missing_from(text + "\nPairing lives in `runs/pairing.py`.\n", modules) == []
    # a file name on another folder's line does not count
    assert modules_missing_from("- `bus/`: `pairing.py`\n", ["runs/pairing.py"]) == [
        "hitl_app/runs/pairing.py: not in docs/architecture.md (not by path; no `runs/` line in the doc, no `pairing.py` on it)"
    ]


def test_an_import_the_table_does_not_allow_is_caught():
    """The checker itself: store/ importing the desk is reported with its file and line; a single
    module listed in the column allows that module only."""
    text = (
        "| room | holds | imports of the app |\n|---|---|---|\n"
        "| `store/` | tables | `review/` |\n"
        "| `desk/` | deciding | `store/`, `threads/views.py` |\n"
        "| `review/` | words | |\n| `threads/` | the service | `desk/` |\n"
    )
    modules = ["store/x.py", "desk/y.py", "review/z.py", "threads/views.py", "threads/service.py"]
    rooms = rooms_table(text, modules)
    assert rooms.problems == ()
    sources = {
        "store/x.py": "from hitl_app.review.types import AnyDecision\n\nfrom hitl_app.desk.final import final_decisions\n",
        "desk/y.py": "from hitl_app.threads.views import ThreadView\nfrom hitl_app.threads import service\n",
    }
    assert imports_outside_the_table(rooms, sources) == [
        "hitl_app/desk/y.py:2: imports hitl_app.threads.service (threads/), which the rooms table's row for"
        " `desk/` does not list under 'imports of the app'",
        "hitl_app/store/x.py:3: imports hitl_app.desk.final.final_decisions (desk/), which the rooms table's row"
        " for `store/` does not list under 'imports of the app'",
    ]


def test_a_room_without_a_row_is_caught():
    text = "| room | holds | imports of the app |\n|---|---|---|\n| `store/` | tables | `nowhere/` |\n"
    assert rooms_table(text, ["store/x.py", "bus/y.py"]).problems == (
        "docs/architecture.md:3: `nowhere/` in the imports column is no room or module of hitl_app/",
        "docs/architecture.md: the rooms table has no row for `bus/`",
    )
