"""A hook's recall within the agent's patience: past its deadline the hook answers without
context, and the recall finishes (and is logged) on its own."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from app.schemas.recall import RecallResponse

log = logging.getLogger("engram.agents")

# Recalls past their deadline, held until they end (an unreferenced task may be collected).
_LATE: set[asyncio.Task[Any]] = set()


def _late_done(task: asyncio.Task[Any]) -> None:
    _LATE.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.warning("a late hook recall failed", extra={"error": repr(task.exception())})


async def within(
    recall: Coroutine[Any, Any, tuple[RecallResponse, bool]], *, deadline_s: float
) -> RecallResponse | None:
    """The recall's answer, or None once `deadline_s` has passed."""
    call = asyncio.ensure_future(recall)
    done, _ = await asyncio.wait({call}, timeout=deadline_s)
    if not done:
        log.warning("hook recall past its deadline", extra={"deadline_s": deadline_s})
        _LATE.add(call)
        call.add_done_callback(_late_done)
        return None
    response, _ = call.result()
    return response


async def late_recalls() -> None:
    """Wait for the recalls that passed their deadline (tests, shutdown)."""
    await asyncio.gather(*list(_LATE))
