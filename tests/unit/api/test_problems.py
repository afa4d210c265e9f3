"""Problem documents and the arguments hash: the words a refusal carries, the hash a decision names."""

from __future__ import annotations

import json

from hitl_app.api.problems import ApiProblem, first_error, problem_of, problem_response
from hitl_app.errors import ThreadError
from hitl_app.review.args_hash import args_hash
from hitl_app.review.validate import ReviewError


def test_refusals_keep_the_pages_sentence_and_get_their_status():
    stale = problem_of(ReviewError("This review was already decided.", code="stale"))
    assert (stale.status, stale.code, stale.detail) == (409, "stale", "This review was already decided.")
    assert problem_of(ReviewError("Card 1: not yours.", code="forbidden")).status == 403
    assert problem_of(ReviewError("Field to: must be text.", code="bad_args")).status == 422
    assert problem_of(ThreadError("This thread belongs to someone else.", code="forbidden")).status == 403
    assert problem_of(ThreadError("That is not a thread address.", code="not_found")).status == 404
    assert problem_of(ThreadError("The database did not answer.", code="db_unavailable")).status == 503


def test_a_problem_is_served_as_problem_json():
    response = problem_response(ApiProblem(429, "rate_limited", "Too many requests.", {"Retry-After": "12"}))
    assert response.media_type == "application/problem+json" and response.headers["retry-after"] == "12"
    body = json.loads(bytes(response.body))
    assert body == {"type": "/api/v1/problems#rate_limited", "title": "Too Many Requests", "status": 429,
                    "detail": "Too many requests.", "code": "rate_limited"}


def test_a_validation_error_becomes_one_sentence_naming_the_field():
    assert first_error([{"type": "json_invalid", "loc": ("body", 3), "msg": "x"}]) == "The body is not valid JSON."
    sentence = first_error([{"type": "int_parsing", "loc": ("body", "card"), "msg": "Input should be a valid integer"}])
    assert sentence.startswith("Field card: Input should be a valid integer")
    assert "openapi" in first_error([])


def test_the_arguments_hash_changes_with_any_argument_and_not_with_key_order():
    shown = args_hash("send_email", {"to": "bob@example.com", "body": "hi", "cc": ["a@example.com"]})
    assert shown == args_hash("send_email", {"cc": ["a@example.com"], "body": "hi", "to": "bob@example.com"})
    assert shown != args_hash("send_email", {"to": "carol@example.com", "body": "hi", "cc": ["a@example.com"]})
    assert shown != args_hash("delete_file", {"to": "bob@example.com", "body": "hi", "cc": ["a@example.com"]})
    assert len(shown) == 64 and int(shown, 16) >= 0
