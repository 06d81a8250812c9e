"""The few pieces whose sync and async forms differ by more than `await`: waiting, blocking
work and flattening pages. Each async one is `async_<name>` beside its sync twin `<name>`,
and client/generate_sync.py renames the one to the other, so client.py and resources.py
stay a mechanical copy of aio.py and aio_resources.py."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")


async def async_sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


def sleep(seconds: float) -> None:
    time.sleep(seconds)


async def async_run_blocking(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """Blocking work (writing a file, building a frame) in a thread, off the event loop."""
    return await asyncio.to_thread(fn, *args, **kwargs)


def run_blocking(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    return fn(*args, **kwargs)


async def async_items_of(pages: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """Every item of every page, each page fetched as the iteration reaches it."""
    async for page in pages:
        for item in page.items:
            yield item


def items_of(pages: Iterable[Any]) -> Iterator[Any]:
    for page in pages:
        yield from page.items
