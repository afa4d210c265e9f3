"""Benchmark-only: the desk switched off, for section 3's "desk off" review row (issue 23).

Loaded by ``bench/_inject/sitecustomize.py`` in an app server the bench starts with
``HITL_BENCH_DESK_OFF=1`` (never by the app). Each desk feature on the card's path answers at
once, as if the policy had none of it: no grants (the graph's ``GrantChecker`` and the run's
``InterruptGrants`` find none, no database read), no rights or drafts (the cards are the policy's
defaults: the owner decides alone, nothing drafted; no deadline, undo window or "requested" row),
no kept choices, no effect previews. What is left is the thread's own path: the checkpoint, the
owner's check, the cards built and sent. The review row measured on such a server is the floor the
desk's card is held to (target: <= 1.2x of it, in the same run).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


async def _no_grant(self: Any, *args: Any, **kwargs: Any) -> None:
    return None


def patch_grant_check(module: Any) -> None:
    """No grant ever applies: the graph's per-call check and the arriving review's check answer None."""
    module.GrantChecker.__call__ = _no_grant
    module.InterruptGrants.__call__ = _no_grant


def patch_previews(module: Any) -> None:
    """No effect preview: every card's is None."""

    async def effect_previews(review: Any, **kwargs: Any) -> list[None]:
        return [None] * len(review.action_requests)

    module.effect_previews = effect_previews


def patch_choices(module: Any) -> None:
    """No kept choices (none read; a pick is not kept)."""

    async def read(self: Any, interrupt_id: str, person: Any) -> dict[int, dict[str, Any]]:
        return {}

    async def save(self: Any, *args: Any, **kwargs: Any) -> bool:
        return False

    module.CardChoices.read = read
    module.CardChoices.save = save
    module.CardChoices.read_ahead = lambda self, interrupt_id, person: None


def patch_review_reads(module: Any) -> None:
    """A review's rows without the desk: the policy's default cards (owner decides), nothing drafted,
    no desk rows, "requested" now; no database read."""
    from hitl_app.desk.cards import cards_for

    async def read(self: Any, review: Any, recorded: str, owner_id: str) -> Any:
        cards = cards_for(review, owner_id, {}, [])
        return module.ReviewRows(recorded, datetime.now(UTC), cards, {}, (None, None, "", {}))

    module.ReviewReads.read = read


PATCHES = {
    "hitl_app.desk.grant_check": patch_grant_check,
    "hitl_app.desk.previews": patch_previews,
    "hitl_app.desk.choices": patch_choices,
    "hitl_app.threads.review_reads": patch_review_reads,
}
"""Module -> its patch, applied right after the module is first imported."""
