"""Effect previews for the cards of a pending review (``hitl_app.agent.preview``), off the event loop.

Only for the built-in demo agent, whose tools act on the thread owner's workspace: a developer's
agent (``HITL_AGENT``) may have tools with the same names that do something else.

A preview is per-review work, never per-tab work. Each card's preview is computed once per
(interrupt, owner, card, arguments) in this worker and kept (``PreviewCache``): every tab that opens
the review, and every tab opening it while the first count still runs, shares that one result. A
write statement's row count runs on a budget of its own (``HITL_PREVIEW_BUDGET_S``, 0.5 s by
default; never longer than the tool's own ``HITL_SQL_TIMEOUT_S``), and at most
``HITL_PREVIEWS_AT_ONCE`` previews are computed at once in a worker, all reviews together.
"""

# Tested by: tests/integration/ui/test_preview_budget_ws.py,
# tests/e2e/test_review_editing.py, tests/integration/ui/test_card_choices_ws.py

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from typing import Any

from hitl_app.agent.limits import ToolLimits
from hitl_app.agent.preview import EffectPreview, preview_call
from hitl_app.review.types import PendingReview
from hitl_app.settings import Settings
from hitl_app.store.owners import OwnerSpace, owner_space

log = logging.getLogger("hitl_app.threads")

KEPT_PREVIEWS = 512
"""Card previews kept per worker (the oldest go first; a review's tabs ask within minutes)."""

PreviewKey = tuple[str, str, int, str]
"""(interrupt id, owner, card index, SHA-256 of the previewed arguments as canonical JSON)."""


def args_digest(args: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of ``args`` as canonical JSON (sorted keys; values JSON cannot hold as text)."""
    text = json.dumps(args, sort_keys=True, separators=(",", ":"), default=repr, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class PreviewCache:
    """One computation per card preview, shared by every caller in this worker's event loop.

    Args:
        at_once: previews computed at the same time (a semaphore over every review).
        kept: finished or running previews kept (least recently asked go first).

    Attributes:
        computed: how many previews were computed (not taken from the cache) since start.
    """

    def __init__(self, at_once: int, kept: int = KEPT_PREVIEWS) -> None:
        self._gate = asyncio.Semaphore(at_once)
        self._kept = kept
        self._tasks: OrderedDict[PreviewKey, asyncio.Task[EffectPreview | None]] = OrderedDict()
        self.computed = 0

    async def get(self, key: PreviewKey, compute: Callable[[], EffectPreview | None]) -> EffectPreview | None:
        """The preview for ``key``: the kept one, the one being computed, or ``compute()`` run now
        in a thread under the semaphore. A caller that goes away (a closed tab) does not stop a
        computation others may share."""
        task = self._tasks.get(key)
        if task is None or (task.done() and task.cancelled()):
            task = asyncio.get_running_loop().create_task(self._run(compute), name=f"preview|{key[0]}|{key[2]}")
            self._tasks[key] = task
            while len(self._tasks) > self._kept:
                self._tasks.popitem(last=False)
        self._tasks.move_to_end(key)
        return await asyncio.shield(task)

    async def _run(self, compute: Callable[[], EffectPreview | None]) -> EffectPreview | None:
        async with self._gate:
            self.computed += 1
            return await asyncio.to_thread(compute)


_caches: dict[asyncio.AbstractEventLoop, PreviewCache] = {}


def preview_cache(settings: Settings) -> PreviewCache:
    """This event loop's ``PreviewCache`` (created on first use with ``settings.previews_at_once``)."""
    loop = asyncio.get_running_loop()
    cache = _caches.get(loop)
    if cache is None:
        for old in [key for key in _caches if key.is_closed()]:
            del _caches[old]
        cache = _caches[loop] = PreviewCache(settings.previews_at_once)
    return cache


def preview_limits(settings: Settings) -> ToolLimits:
    """The tool limits with the SQL time cut to the preview budget (never above the tool's own)."""
    limits = ToolLimits.from_settings(settings)
    return replace(limits, sql_timeout_s=min(limits.sql_timeout_s, settings.preview_budget_s))


def _one(
    review: PendingReview, space: OwnerSpace, index: int, args: Mapping[str, Any], limits: ToolLimits,
) -> EffectPreview | None:
    name = review.action_requests[index].name
    try:
        return preview_call(space, name, args, limits)
    except Exception:
        log.exception("effect preview failed thread=%s tool=%s", review.thread_id, name)
        return None


async def effect_previews(
    review: PendingReview, *, settings: Settings, owner: str,
    args: Mapping[int, Mapping[str, Any]] | None = None, only: Collection[int] | None = None,
) -> list[EffectPreview | None]:
    """One preview (or None) per action request of ``review``, in order; each computed once per
    review and arguments in this worker (see the module docstring), the cards concurrently.

    Args:
        review: the pending review (its action requests, in order).
        settings: the app settings (data folders, tool limits, preview budget and cap, ``agent``:
            previews only for the built-in demo agent, else every entry is None).
        owner: the thread's owner (whose workspace the calls would act on).
        args: card index -> the arguments to preview instead of the proposed ones (a reviewer's
            checked edit); the same guards apply as for the proposal (``preview_call``).
        only: preview only these card indexes (the others are None); all when None.
    """
    count = len(review.action_requests)
    if settings.agent:
        return [None] * count
    limits, cache, edits = preview_limits(settings), preview_cache(settings), args or {}
    space = owner_space(files_root=settings.files_dir, demo_db_path=settings.demo_db_path, owner=owner)

    async def card(index: int) -> EffectPreview | None:
        if only is not None and index not in only:
            return None
        call_args = edits.get(index, review.action_requests[index].args)
        key = (review.interrupt_id, owner, index, args_digest(call_args))
        return await cache.get(key, lambda: _one(review, space, index, call_args, limits))

    return list(await asyncio.gather(*(card(i) for i in range(count))))
