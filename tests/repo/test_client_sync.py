"""The sync client (client.py, resources.py) is generated from the async one by
client/generate_sync.py: the committed files are what it writes, and its rewrite turns
async code into sync code while leaving strings and comments alone."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "client" / "generate_sync.py"

ASYNC_SNIPPET = '''\
"""`AsyncThing`, the asynchronous thing."""

from engram_client._twins import async_sleep
from engram_client.aio import AsyncEngram


class AsyncThing:
    """Wraps an `AsyncEngram`; "await" here is prose."""

    async def __aenter__(self) -> AsyncThing:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    async def names(self, client: httpx.AsyncClient) -> AsyncIterator[str]:
        async with client.stream("GET", "/") as response:
            async for line in response.aiter_lines():  # await async for, kept
                await async_sleep(0)
                yield f"await {line!r} from AsyncEngram"
        label = "async def x(): await y  AsyncThing"
        yield (await self.first(label)).name
'''

SYNC_SNIPPET = '''\
"""Generated from aio_thing.py by `python client/generate_sync.py`; do not edit by hand.

`Thing`, the synchronous thing."""

from engram_client._twins import sleep
from engram_client.client import Engram


class Thing:
    """Wraps an `Engram`; "await" here is prose."""

    def __enter__(self) -> Thing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.close()

    def names(self, client: httpx.Client) -> Iterator[str]:
        with client.stream("GET", "/") as response:
            for line in response.iter_lines():  # await async for, kept
                sleep(0)
                yield f"await {line!r} from AsyncEngram"
        label = "async def x(): await y  AsyncThing"
        yield (self.first(label)).name
'''


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_sync", GENERATOR)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sync_client_is_generated_from_the_async_one() -> None:
    done = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, (
        "client.py or resources.py differ from what client/generate_sync.py writes from "
        f"aio.py and aio_resources.py (run it):\n{done.stdout}{done.stderr}"
    )


def test_the_rewrite_turns_async_code_into_sync_code_and_leaves_strings(
    generator: ModuleType,
) -> None:
    assert generator.unasync(ASYNC_SNIPPET, origin="aio_thing.py") == SYNC_SNIPPET


def test_an_async_name_without_a_sync_twin_is_refused(generator: ModuleType) -> None:
    source = '"""A module."""\n\nasync def wait() -> None:\n    await asyncio.sleep(1)\n'
    sync = generator.unasync(source, origin="aio.py")
    # Line 6 of the output: the generated notice adds two lines to the docstring.
    assert generator.leftovers(sync) == ["6: asyncio"]
