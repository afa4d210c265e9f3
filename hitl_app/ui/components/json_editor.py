"""The JSON editor for a tool call's arguments, as a Reflex component (CodeMirror 6).

The React side is ``assets/json_editor.js``: CodeMirror 6 through ``@uiw/react-codemirror`` with
``@codemirror/lang-json`` (highlighting, bracket matching, the JSON syntax check) and
``@cfworker/json-schema`` (the schema check; it compiles no code, so it needs no ``eval``). Each
problem is written at the end of its line as you type (``data-testid="edit-json-error"``,
``data-line``), marked in the gutter and underlined; a status line under the editor lists them for
screen readers (``edit-json-status``). Everything is installed from the npm registry at build time
and served by the app: nothing is fetched from a CDN. CodeMirror injects its styles at run time,
which the app's ``style-src 'unsafe-inline'`` allows.

The browser's checks are a help only: the server validates the arguments again on submit.
"""

# Tested by: tests/e2e/test_editor_components.py, tests/e2e/test_review_editing.py - loaded only when shown

from __future__ import annotations

from typing import Any

import reflex as rx

from hitl_app.review.types import MAX_PASTE_CHARS

CODEMIRROR_PACKAGES = [
    "@uiw/react-codemirror@4.25.12",
    "@codemirror/lang-json@6.0.2",
    "@codemirror/language@6.13.1",
    "@codemirror/lint@6.9.8",
    "@codemirror/state@6.7.6",
    "@codemirror/view@6.43.15",
    "@cfworker/json-schema@4.1.6",
]
"""The npm packages of the editor, pinned exactly (one copy of ``@codemirror/state`` and
``@codemirror/view`` in the bundle: two copies break CodeMirror's extension checks)."""


class JsonEditor(rx.NoSSRComponent):
    """``<JsonEditor>`` from ``assets/json_editor.js``, loaded when an editor first shows.

    A ``NoSSRComponent``: the page imports ``json_editor.js`` (and CodeMirror with it, most of the
    thread page's script) with a dynamic ``import()`` when the first JSON editor mounts, so opening a
    thread does not download and compile the editor (issue 23: opening a thread). Until it has
    loaded, the editor's place is empty for a moment.

    Props:
        value: the JSON text to show. Taken over while the editor does not have focus and has no
            unsent typing (so a server echo never overwrites what a person is typing).
        schema: the tool's args JSON schema (dict, pydantic ``model_json_schema()``), or ``None``
            for syntax checks only.
        debounce_ms: how long typing must pause before ``on_change`` fires (ms, default 300);
            leaving the editor (blur, ``Esc``) sends at once.
        settle_ms: how long typing must pause before ``on_settle`` fires (ms, default 800).
        aria_label: the editing area's accessible name.
        read_only: show without editing.

    Events:
        on_change(text: str): the editor's text, debounced.
        on_settle(): typing paused ``settle_ms``, or the editor was left (after ``on_change``):
            e.g. keep the draft on the server, without a write per pause of ``debounce_ms``.
    """

    library = "$/public/json_editor.js"
    tag = "JsonEditor"
    lib_dependencies: list[str] = CODEMIRROR_PACKAGES

    value: rx.Var[str]
    schema: rx.Var[dict[str, Any] | None]
    debounce_ms: rx.Var[int]
    settle_ms: rx.Var[int]
    aria_label: rx.Var[str]
    read_only: rx.Var[bool]
    max_length: rx.Var[int]

    on_change: rx.EventHandler[rx.event.passthrough_event_spec(str)]  # type: ignore[type-arg, valid-type]  # Reflex's own idiom
    on_settle: rx.EventHandler[rx.event.no_args_event_spec]  # type: ignore[type-arg, valid-type]  # as on_change


def json_editor(
    value: rx.Var[str] | str, on_change: Any, schema: rx.Var | dict[str, Any] | None = None, **props: Any
) -> rx.Component:
    """The arguments' JSON editor with the stable test id ``edit-json``.

    Args:
        value: the JSON text (a state var).
        on_change: event handler called with the text, e.g. ``lambda text: CardState.set_json(i, text)``.
        schema: the tool's args JSON schema (a state var or dict), ``None`` for syntax checks only.
        **props: more ``JsonEditor`` props (``debounce_ms``, ``settle_ms``, ``on_settle``, ``aria_label``,
            ``read_only``) or
            attributes for the wrapper (``custom_attrs``).

    Returns:
        The component (client-only: CodeMirror needs the DOM).
    """
    attrs = {"data-testid": "edit-json", **props.pop("custom_attrs", {})}
    props.setdefault("max_length", MAX_PASTE_CHARS)  # what reaches the server, as a text box's maxlength
    return rx.box(
        JsonEditor.create(value=value, schema=schema, on_change=on_change, custom_attrs=attrs, **props),
        width="100%",
    )
