"""Effect previews for the cards of a pending review (``hitl_app.agent.preview``), off the event loop.

Only for the built-in demo agent, whose tools act on the thread owner's workspace: a developer's
agent (``HITL_AGENT``) may have tools with the same names that do something else.
"""

# Tested by: tests/e2e/test_review_editing.py, tests/integration/ui/test_card_choices_ws.py

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from hitl_app.agent.limits import ToolLimits
from hitl_app.agent.preview import EffectPreview, preview_call
from hitl_app.review.types import PendingReview
from hitl_app.settings import Settings
from hitl_app.store.owners import owner_space

log = logging.getLogger("hitl_app.threads")


def _previews(
    review: PendingReview, files_root: Path, demo_db_path: Path, owner: str, limits: ToolLimits,
    args: Mapping[int, Mapping[str, Any]], only: Collection[int] | None,
) -> list[EffectPreview | None]:
    space = owner_space(files_root=files_root, demo_db_path=demo_db_path, owner=owner)
    out: list[EffectPreview | None] = []
    for index, action in enumerate(review.action_requests):
        if only is not None and index not in only:
            out.append(None)
            continue
        try:
            out.append(preview_call(space, action.name, args.get(index, action.args), limits))
        except Exception:
            log.exception("effect preview failed thread=%s tool=%s", review.thread_id, action.name)
            out.append(None)
    return out


async def effect_previews(
    review: PendingReview, *, settings: Settings, owner: str,
    args: Mapping[int, Mapping[str, Any]] | None = None, only: Collection[int] | None = None,
) -> list[EffectPreview | None]:
    """One preview (or None) per action request of ``review``, in order.

    Args:
        review: the pending review (its action requests, in order).
        settings: the app settings (data folders, tool limits, ``agent``: previews only for the
            built-in demo agent, else every entry is None).
        owner: the thread's owner (whose workspace the calls would act on).
        args: card index -> the arguments to preview instead of the proposed ones (a reviewer's
            checked edit); the same guards apply as for the proposal (``preview_call``).
        only: preview only these card indexes (the others are None); all when None.
    """
    if settings.agent:
        return [None] * len(review.action_requests)
    limits = ToolLimits.from_settings(settings)
    return await asyncio.to_thread(
        _previews, review, settings.files_dir, settings.demo_db_path, owner, limits, args or {}, only
    )
