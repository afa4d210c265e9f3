"""A test-only page for the argument editor (form, JSON editor, diff), outside any thread.

Registered by ``register_test_pages`` only when ``HITL_TEST_HOOKS=1``, at ``/test/editor``. It shows
the edit panel for two samples: ``send_email``'s arguments schema and a nested ``ship_order``
schema (objects, an enum, numbers, a boolean, arrays of scalars and of objects). Its state class is
also the reference for wiring the panel into an approval card: one draft (a dict) that both modes
edit, the JSON text kept beside it, and the diff computed from the two.
"""

# Tested by: tests/e2e/test_editor_components.py

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any, Literal

import reflex as rx
from pydantic import BaseModel, Field

from hitl_app.agent.tools import EmailAddress
from hitl_app.review.diff import DiffLine, diff_args, diff_lines
from hitl_app.review.form_rows import FormRow, form_rows
from hitl_app.review.schema_fields import FormField, fields_from_schema
from hitl_app.review.schema_form import add_item, args_from_form, remove_item, set_value
from hitl_app.ui.components.json_editor import json_editor
from hitl_app.ui.components.schema_form import edit_diff, edit_mode_switch, schema_form

ROUTE = "/test/editor"


class SendEmailArgs(BaseModel):
    """``send_email``'s arguments as the model sees them."""

    to: EmailAddress
    subject: str
    body: str


class Contact(BaseModel):
    """Who receives the parcel."""

    name: str
    email: str | None = Field(None, description="For delivery notices")


class OrderLine(BaseModel):
    """One line of the test order (a nested object in the form)."""

    sku: str = Field(description="Stock keeping unit")
    qty: int = Field(1, description="How many")


class ShipOrderArgs(BaseModel):
    """A nested sample: a parcel with a recipient, lines and options."""

    recipient: Contact
    speed: Literal["economy", "standard", "express"] = "standard"
    weight_kg: float = Field(description="Parcel weight in kilograms")
    insured: bool = False
    lines: list[OrderLine]
    labels: list[str] = []
    note: str | None = None


SAMPLES: dict[str, tuple[type[BaseModel], dict[str, Any]]] = {
    "send_email": (
        SendEmailArgs, {"to": "alice@example.com", "subject": "Quarterly report", "body": "Hi Alice,\nthe report is attached."}
    ),
    "ship_order": (
        ShipOrderArgs,
        {
            "recipient": {"name": "Alice", "email": "alice@example.com"},
            "speed": "standard",
            "weight_kg": 2.5,
            "insured": False,
            "lines": [{"sku": "BOOK-1", "qty": 1}, {"sku": "PEN-7", "qty": 3}],
            "labels": ["fragile"],
            "note": "Leave at the door",
        },
    ),
}


@cache
def _schema(sample: str) -> dict[str, Any]:
    return SAMPLES[sample][0].model_json_schema()


@cache
def _fields(sample: str) -> tuple[FormField, ...]:
    return tuple(fields_from_schema(_schema(sample)))


class EditorTestState(rx.State):
    """One draft edited through the form or the JSON editor, against the sample's proposal."""

    sample: str = "send_email"
    draft: dict[str, Any] = {}
    json_text: str = ""
    json_error: str = ""
    mode: str = "form"
    revision: int = 0

    @rx.var
    def schema(self) -> dict[str, Any]:
        """The sample tool's args JSON schema."""
        return _schema(self.sample)

    @rx.var
    def rows(self) -> list[FormRow]:
        """The form's rows for the draft, with per-field problems."""
        fields = list(_fields(self.sample))
        return form_rows(fields, self.draft, args_from_form(fields, self.draft).errors)

    @rx.var
    def diff(self) -> list[DiffLine]:
        """The edited arguments (types coerced) against the proposal."""
        return diff_lines(diff_args(SAMPLES[self.sample][1], args_from_form(list(_fields(self.sample)), self.draft).args))

    def _replace_draft(self, draft: dict[str, Any]) -> None:
        self.draft = draft
        self.json_text = json.dumps(draft, indent=2, ensure_ascii=False)
        self.json_error = ""

    @rx.event
    def load(self, sample: str = "send_email"):
        """Start over with ``sample``'s proposed arguments (form mode)."""
        self.sample = sample if sample in SAMPLES else "send_email"
        self._replace_draft(dict(SAMPLES[self.sample][1]))
        self.mode = "form"
        self.revision += 1

    @rx.event
    def set_mode(self, mode: str):
        """Switch between ``form`` and ``json`` over the same draft."""
        self.mode = "json" if mode == "json" else "form"
        self.revision += 1

    @rx.event
    def set_field(self, path: str, value: Any):
        """A form input's new value (the JSON text is rewritten from the draft)."""
        self._replace_draft(set_value(list(_fields(self.sample)), self.draft, path, value))

    @rx.event
    def add_item(self, path: str):
        """Append a blank item to the array at ``path``."""
        self._replace_draft(add_item(list(_fields(self.sample)), self.draft, path))
        self.revision += 1

    @rx.event
    def remove_item(self, path: str):
        """Remove the array item at ``path``."""
        self._replace_draft(remove_item(self.draft, path))
        self.revision += 1

    @rx.event
    def set_json(self, text: str):
        """The JSON editor's text: kept as typed; the draft follows when it is a JSON object."""
        self.json_text = text
        try:
            value = json.loads(text)
        except ValueError as exc:
            self.json_error = f"not valid JSON: {exc}"
            return
        if not isinstance(value, dict):
            self.json_error = "the arguments must be a JSON object"
            return
        self.draft, self.json_error = value, ""


def editor_test_page() -> rx.Component:
    """The edit panel for the chosen sample, with buttons to pick one (``sample-<name>``)."""
    s = EditorTestState
    return rx.container(
        rx.vstack(
            rx.heading("Argument editor (test page)", size="4"),
            rx.hstack(
                *[
                    rx.button(
                        name, size="1", variant="outline", on_click=s.load(name), data_testid=f"sample-{name}"
                    ) for name in SAMPLES
                ],
                # data-revision: 0 until the page's on_load ran (a pick before it was undone by it)
                rx.badge(s.sample, data_testid="sample-name", custom_attrs={"data-revision": s.revision}),
            ),
            edit_mode_switch(s.mode, s.set_mode),
            rx.cond(
                s.mode == "json",
                json_editor(s.json_text, s.set_json, schema=s.schema, aria_label="Arguments (JSON)"),
                rx.vstack(
                    rx.cond(s.json_error != "", rx.callout(
                        "The JSON text has an error; the form shows the last valid arguments.", color_scheme="amber", size="1",
                    )),
                    schema_form(s.rows, s.set_field, s.add_item, s.remove_item, revision=s.revision),
                    width="100%",
                ),
            ),
            edit_diff(s.diff),
            rx.el.pre(s.json_text, data_testid="draft-json", style={"fontSize": "11px", "opacity": "0.7"}),
            spacing="3",
            width="100%",
            padding_y="16px",
        ),
        size="2",
    )


def register_test_pages(app: rx.App) -> None:
    """Add ``/test/editor`` to ``app`` when ``HITL_TEST_HOOKS=1`` (never in a normal run)."""
    if os.environ.get("HITL_TEST_HOOKS") != "1":
        return
    app.add_page(editor_test_page, route=ROUTE, on_load=EditorTestState.load("send_email"), title="hitl_app · editor test")


TEST_STATES: tuple[type[rx.State], ...] = (EditorTestState,)
"""The test pages' states: open to a socket without a session (``ui.state.socket_gate``)."""
