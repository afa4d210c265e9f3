"""A tool's JSON schema as form fields, and the form's draft back into tool call arguments."""

from __future__ import annotations

from enum import Enum
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from hitl_app.review.form_rows import NONE_OPTION, form_rows
from hitl_app.review.schema_fields import SchemaError, fields_from_schema
from hitl_app.review.schema_form import add_item, args_from_form, field_at, remove_item, set_value


class Priority(str, Enum):  # noqa: UP042 - models written for Python < 3.11 use (str, Enum); the form must read them
    low = "low"
    high = "high"


class Address(BaseModel):
    """A postal address."""

    city: str = Field(description="City name")
    zip: str | None = None


class Line(BaseModel):
    sku: str
    qty: int = Field(1, description="How many")


class Order(BaseModel):
    customer: str
    priority: Priority = Priority.low
    channel: Literal["web", "phone"] | None = None
    total: float
    gift: bool = False
    address: Address
    tags: list[str] = []
    lines: list[Line]
    note: str | None = Field(None, description="Free text")


SCHEMA = Order.model_json_schema()
FIELDS = fields_from_schema(SCHEMA)


def by_path(path: str):
    found = field_at(FIELDS, path)
    assert found is not None, path
    return found


def test_send_email_schema_maps_to_three_required_text_fields(tools):
    schema = tools["send_email"].tool_call_schema.model_json_schema()
    fields = fields_from_schema(schema)
    assert [(f.path, f.kind, f.required) for f in fields] == [
        ("to", "string", True), ("subject", "string", True), ("body", "string", True),
    ]
    assert fields[0].description == "an email address like name@example.com"
    assert fields[2].multiline and not fields[0].multiline


def test_kinds_required_defaults_and_enums_through_refs():
    assert [(f.path, f.kind, f.required) for f in FIELDS] == [
        ("customer", "string", True), ("priority", "enum", False), ("channel", "enum", False),
        ("total", "number", True), ("gift", "boolean", False), ("address", "object", True),
        ("tags", "array", False), ("lines", "array", True), ("note", "string", False),
    ]
    assert by_path("priority").options == ("low", "high") and by_path("priority").default == "low"
    assert by_path("channel").nullable and by_path("channel").options == ("web", "phone")
    assert by_path("note").nullable and by_path("note").description == "Free text"
    assert by_path("note").label == "Note"
    assert by_path("address").label == "Address"  # the property's name, not the model's title


def test_nested_objects_and_arrays_of_scalars_and_objects():
    assert [(c.path, c.required, c.nullable) for c in by_path("address").children] == [
        ("address.city", True, False), ("address.zip", False, True),
    ]
    assert by_path("address.city").description == "City name"
    assert by_path("tags").item.kind == "string" and by_path("tags").item.path == "tags.*"
    assert [(c.path, c.kind) for c in by_path("lines").item.children] == [("lines.*.sku", "string"), ("lines.*.qty", "integer")]
    assert by_path("lines.3.qty").description == "How many"


def test_unknown_reference_is_refused():
    with pytest.raises(SchemaError):
        fields_from_schema({"type": "object", "properties": {"a": {"$ref": "#/$defs/Nope"}}})


def test_form_values_become_typed_arguments_and_empty_optionals_drop():
    draft = {"customer": "ACME", "priority": "high", "channel": "", "total": "12.5", "gift": "true",
             "address": {"city": "Oslo", "zip": ""}, "tags": ["a"], "lines": [{"sku": "x", "qty": "3"}], "note": None}
    result = args_from_form(FIELDS, draft)
    assert result.errors == {}
    assert result.args == {"customer": "ACME", "priority": "high", "total": 12.5, "gift": True,
                           "address": {"city": "Oslo"}, "tags": ["a"], "lines": [{"sku": "x", "qty": 3}]}
    Order.model_validate(result.args)


def test_per_field_errors_name_the_path():
    draft = {
        "customer": "", "priority": "urgent", "total": "12x", "address": {}, "lines": [{"sku": "x", "qty": "1.5"}], "extra": 1
    }
    result = args_from_form(FIELDS, draft)
    assert result.errors == {
        "priority": "must be one of low, high", "total": "must be a number",
        "address.city": "required", "lines.0.qty": "must be a whole number",
    }
    assert result.args["extra"] == 1  # kept: the server refuses unknown arguments on submit
    assert result.args["customer"] == ""  # empty text is a value of a required string (QA: an email with no body)


def test_an_empty_required_string_is_sent_as_it_is_so_only_to_changes_on_an_email_without_a_body(tools):
    fields = fields_from_schema(tools["send_email"].tool_call_schema.model_json_schema())
    result = args_from_form(fields, {"to": "carol@example.com", "subject": "hi", "body": ""})
    assert result.errors == {}
    assert result.args == {"to": "carol@example.com", "subject": "hi", "body": ""}
    assert args_from_form(fields, {"to": "carol@example.com", "subject": "hi"}).errors == {"body": "required"}


def test_editing_the_draft_by_path():
    draft = {"customer": "ACME", "total": 1, "address": {"city": "Oslo"}, "lines": []}
    draft = set_value(FIELDS, draft, "total", "42")
    draft = set_value(FIELDS, draft, "address.zip", "0150")
    draft = set_value(FIELDS, draft, "priority", "high")
    draft = set_value(FIELDS, draft, "gift", True)
    draft = add_item(FIELDS, draft, "lines")
    draft = set_value(FIELDS, draft, "lines.0.qty", "5")
    draft = add_item(FIELDS, draft, "tags")
    assert draft == {"customer": "ACME", "total": 42, "address": {"city": "Oslo", "zip": "0150"}, "priority": "high",
                     "gift": True, "lines": [{"sku": "", "qty": 5}], "tags": [""]}
    draft = set_value(FIELDS, draft, "address.zip", "")
    draft = remove_item(draft, "tags.0")
    assert draft["address"] == {"city": "Oslo"} and draft["tags"] == []
    assert set_value(FIELDS, draft, "total", "4,5")["total"] == "4,5"  # kept as typed, reported


def test_rows_flatten_nesting_with_depth_labels_and_errors():
    draft = {"customer": "ACME", "total": "x", "address": {"city": "Oslo"}, "lines": [{"sku": "a", "qty": 2}], "tags": ["t"]}
    rows = form_rows(FIELDS, draft, args_from_form(FIELDS, draft).errors)
    table = {r.path: r for r in rows}
    assert [r.path for r in rows][:8] == [
        "customer", "priority", "channel", "total", "gift", "address", "address.city", "address.zip"
    ]
    assert table["total"].error == "must be a number" and table["total"].value == "x"
    assert table["address.city"].depth == 1 and table["address.city"].aria_label == "Address › City"
    assert table["lines.0"].removable and table["lines.0"].label == "Item 1"
    assert table["lines.0.qty"].value == "2" and table["lines.0.qty"].depth == 2
    assert table["tags.0"].value == "t" and table["tags.0"].removable
    assert table["channel"].options == [NONE_OPTION, "web", "phone"]
    assert table["priority"].options[0] == NONE_OPTION and table["gift"].checked is False
