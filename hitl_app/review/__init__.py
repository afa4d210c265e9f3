"""The HITL review domain: types, validation of decisions, the resume payload. Pure Python."""

from hitl_app.review.types import (
    DECISION_TYPES,
    MAX_EDIT_JSON_CHARS,
    MAX_MESSAGE_CHARS,
    ActionRequest,
    PendingReview,
    ReviewConfig,
)
from hitl_app.review.validate import (
    ArgsError,
    ArgsValidator,
    ReviewError,
    parse_args_json,
    pydantic_args_validator,
    validate_edit_args,
    validate_submission,
)

__all__ = [
    "DECISION_TYPES",
    "MAX_EDIT_JSON_CHARS",
    "MAX_MESSAGE_CHARS",
    "ActionRequest",
    "ArgsError",
    "ArgsValidator",
    "PendingReview",
    "ReviewConfig",
    "ReviewError",
    "parse_args_json",
    "pydantic_args_validator",
    "validate_edit_args",
    "validate_submission",
]
