"""Effect previews for the cards of a pending review (``hitl_app.agent.preview``), off the event loop.

Only for the built-in demo agent, whose tools act on the thread owner's workspace: a developer's
agent (``HITL_AGENT``) may have tools with the same names that do something else.
"""

# Tested by: tests/e2e/test_review_editing.py

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from hitl_app.agent.limits import ToolLimits
from hitl_app.agent.preview import EffectPreview, preview_call
from hitl_app.review.types import PendingReview
from hitl_app.settings import Settings
from hitl_app.store.owners import owner_space

log = logging.getLogger("hitl_app.threads")


def _previews(
    review: PendingReview, files_root: Path, demo_db_path: Path, owner: str, limits: ToolLimits
) -> list[EffectPreview | None]:
    space = owner_space(files_root=files_root, demo_db_path=demo_db_path, owner=owner)
    out: list[EffectPreview | None] = []
    for action in review.action_requests:
        try:
            out.append(preview_call(space, action.name, action.args, limits))
        except Exception:
            log.exception("effect preview failed thread=%s tool=%s", review.thread_id, action.name)
            out.append(None)
    return out


async def effect_previews(review: PendingReview, *, settings: Settings, owner: str) -> list[EffectPreview | None]:
    """One preview (or None) per action request of ``review``, in order.

    Args:
        review: the pending review (its action requests, in order).
        settings: the app settings (data folders, tool limits, ``agent``: previews only for the
            built-in demo agent, else every entry is None).
        owner: the thread's owner (whose workspace the calls would act on).
    """
    if settings.agent:
        return [None] * len(review.action_requests)
    limits = ToolLimits.from_settings(settings)
    return await asyncio.to_thread(_previews, review, settings.files_dir, settings.demo_db_path, owner, limits)
