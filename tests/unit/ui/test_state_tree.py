"""The app's Reflex state tree, as the server builds it: what the browser can call.

In Reflex every public (non-underscore) method of a State is an event handler any socket can
call by name. So every public method must be a handler written as one (``@rx.event``) that checks
the session before it acts (security review F13: ``SessionState._require_principal`` was callable
from the browser), and the test-only states exist only when ``HITL_TEST_HOOKS=1`` (F10).

The tree is read in a fresh interpreter per switch setting: state classes register themselves
on import, so one process cannot show the tree both with and without the test hooks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

_DUMP = r"""
import ast, inspect, json, textwrap
import hitl_app.hitl_app  # the app module: every page and state the server serves
from reflex.state import State

def walk(cls):
    yield cls
    for sub in cls.get_substates():
        yield from walk(sub)

def calls(node):
    return sorted({n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
                   for n in ast.walk(node) if isinstance(n, ast.Call)})

out = []
for cls in walk(State):
    if cls.__module__.startswith("reflex"):
        continue
    handlers = {}
    for name, handler in cls.event_handlers.items():
        if name == "setvar":  # Reflex's own setter on every state (not this app's code)
            continue
        node = ast.parse(textwrap.dedent(inspect.getsource(handler.fn))).body[0]
        body = [b for b in node.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
        # leading local work changes no state: nested functions, and assignments to local names
        # (their calls count: ``who = await current_principal(self)`` is a check)
        seen = []
        while body and (isinstance(body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) or (
                isinstance(body[0], ast.Assign)
                and not any(isinstance(e, ast.Attribute) for t in body[0].targets for e in ast.walk(t)))):
            seen += [] if isinstance(body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) else calls(body[0])
            body = body[1:]
        handlers[name] = {
            "decorators": [ast.unparse(d) for d in node.decorator_list],
            "first_calls": sorted(set(seen) | set(calls(body[0]) if body else [])),
        }
    out.append({"name": cls.__name__, "module": cls.__module__, "full_name": cls.get_full_name(), "handlers": handlers})
print(json.dumps(out))
"""


@cache
def state_tree(test_hooks: bool) -> list[dict]:
    """Every app state class of the served app: ``[{name, full_name, handlers: {name: info}}]``."""
    env = {k: v for k, v in os.environ.items() if k != "HITL_TEST_HOOKS"}
    if test_hooks:
        env["HITL_TEST_HOOKS"] = "1"
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", _DUMP], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


SESSION_CHECKS = {"_require_principal", "_refuse", "_admin", "_act", "_viewer", "current_principal", "signed_in"}
"""Calls that read the tab's session (and act on nothing when it is gone)."""

TAB_ONLY = {
    "MenuState.set_open", "MenuState.close", "WorkspaceState.toggle", "InboxState.set_notify",
    "SessionState.save_reviewer", "ChatState.adopt_identity", "ThreadListState.new_thread",
    "MetricsState.set_period", "AuditState.set_thread_filter", "AuditState.set_tool_filter",
    "AuditState.set_decision_filter",
    # the card editor's keystrokes: they change only this tab's draft of a card it already shows
    # (the draft is checked with the session at "Check edit" and again by the server at Submit)
    "ReviewState.set_edit_mode", "ReviewState.set_field", "ReviewState.add_item", "ReviewState.remove_item",
    "ReviewState.set_json", "ReviewState.keep_draft",
    # the sign-in and invite pages are for people without a session
    "AuthState.load_sign_in", "AuthState.load_invite",
    # these hand on to a handler that checks first (load_thread / refresh / reread / _read) or
    # follow a tab whose session the watcher re-reads before it sends anything
    "ChatState.load_thread", "ChatState.watch", "InboxState.watch", "InboxState.refresh", "InboxState.reread",
    "InboxState.load_more", "ThreadListState.refresh", "AuditState.load", "WorkspaceState.refresh",
    "WorkspaceState.refresh_if_open",
}
"""Handlers that need no session check of their own, each for the reason beside it: they change
only what this tab shows of data it already holds, or hand on at once to a handler that checks."""


def test_every_public_state_method_is_a_declared_event_handler():
    """A public method of a state is callable from any browser; it must be written as a handler."""
    undeclared = [
        f"{state['name']}.{name}"
        for state in state_tree(True)
        for name, info in state["handlers"].items()
        if not any(d == "rx.event" or d.startswith("rx.event(") for d in info["decorators"])
    ]
    assert undeclared == [], f"public state methods that are not @rx.event handlers (prefix helpers with _): {undeclared}"


def test_every_handler_checks_the_session_before_it_acts():
    """Each handler's first statement that could change anything reads the session, unless the
    handler is one of the tab-only ones (test-only states exist only under the test hooks)."""
    unchecked = [
        f"{state['name']}.{name}"
        for state in state_tree(True)
        if not state["module"].startswith("hitl_app.ui.testing")
        for name, info in state["handlers"].items()
        if f"{state['name']}.{name}" not in TAB_ONLY and not SESSION_CHECKS & set(info["first_calls"])
    ]
    assert unchecked == [], f"handlers that act before checking the session: {unchecked}"


def test_test_only_states_exist_only_with_the_test_hooks_switch():
    """Without ``HITL_TEST_HOOKS=1`` no test-only state is in the served app's tree (F10)."""
    normal = {state["name"] for state in state_tree(False)}
    hooked = {state["name"] for state in state_tree(True)}
    assert "EditorTestState" in hooked  # the switch does mount it (so the check below can fail)
    assert "EditorTestState" not in normal
    assert {"ChatState", "ReviewState", "SessionState"} <= normal



READ_OUTSIDE_THE_LOCK = {"InboxState.watch", "InboxState.reread", "ChatState.watch"}
"""Handlers that read the database outside the tab's state lock (background handlers). A submission
returns ``InboxState.reread`` beside the run it resumed, whose first text needs the tab's lock: as a
plain handler its inbox read held that text back (issue 23, submit -> first resumed token)."""


def test_the_handlers_that_read_beside_a_run_do_not_hold_the_tabs_lock():
    """Each of ``READ_OUTSIDE_THE_LOCK`` is a background handler (it takes the lock only to show)."""
    handlers = {f"{state['name']}.{name}": info for state in state_tree(False) for name, info in state["handlers"].items()}
    held = [name for name in sorted(READ_OUTSIDE_THE_LOCK) if "rx.event(background=True)" not in handlers[name]["decorators"]]
    assert held == [], f"handlers that read under the tab's lock: {held}"
