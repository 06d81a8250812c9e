"""Stopping a background task."""

from __future__ import annotations

import asyncio


async def cancel_and_wait(task: asyncio.Task[object]) -> None:
    """Cancel `task` and wait for it to end. Its CancelledError is swallowed; the caller's
    own is not: `suppress(CancelledError)` around the wait cannot tell the two apart, and a
    stop cancelled while it waits would go on as if nothing had happened (a worker stopped
    this way would keep polling, and the shutdown that cancelled it would wait forever)."""
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
