"""cancel_and_wait: the stopped task's cancellation is swallowed, the caller's is not."""

from __future__ import annotations

import asyncio

import pytest

from app.core.tasks import cancel_and_wait


async def _slow_to_stop(stopping: asyncio.Event) -> None:
    try:
        await asyncio.sleep(3600)
    finally:
        stopping.set()
        await asyncio.sleep(0.2)  # cleanup that takes a while, as a job's rollback does


async def test_a_stopped_task_ends_and_its_cancellation_stays_with_it() -> None:
    task = asyncio.create_task(_slow_to_stop(asyncio.Event()))
    await asyncio.sleep(0)
    await cancel_and_wait(task)
    assert task.cancelled()
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_a_stop_cancelled_while_it_waits_is_cancelled() -> None:
    stopping = asyncio.Event()
    inner = asyncio.create_task(_slow_to_stop(stopping))
    await asyncio.sleep(0)
    outer = asyncio.create_task(cancel_and_wait(inner))
    await stopping.wait()  # the outer task now waits for the inner one's cleanup
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert outer.cancelled()
    assert inner.cancelled()


async def test_a_task_already_ended_is_waited_for_at_once() -> None:
    task = asyncio.create_task(asyncio.sleep(0))
    await task
    await cancel_and_wait(task)
    assert task.done()
    assert not task.cancelled()
