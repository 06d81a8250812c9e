"""Requests' texts remembered with their vectors (`app/embeddings/remembered.py`), over a
real HTTP stand-in of an OpenAI-compatible endpoint that counts what it is asked."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import numpy as np
import pytest

from app.core.config import Embeddings
from app.embeddings import start_embedder
from app.embeddings.remembered import Remembered
from tests.embeddings.openai_standin import StandIn, standin_vector


@pytest.fixture
def standin() -> Iterator[StandIn]:
    with StandIn().serve() as running:
        yield running


@pytest.fixture
async def remembered(standin: StandIn) -> AsyncIterator[Remembered]:
    settings = Embeddings(provider="openai", base_url=standin.base_url, model="standin-embed")
    embedder = await start_embedder(settings)
    assert isinstance(embedder, Remembered)  # what the app is given
    standin.seen.clear()  # the start's probe
    yield embedder
    await embedder.close()


def asked(standin: StandIn) -> list[list[str]]:
    return [list(seen.body["input"]) for seen in standin.seen]


async def test_a_text_asked_again_is_not_embedded_again(
    standin: StandIn, remembered: Remembered
) -> None:
    first = await remembered.embed(["release the app"])
    again = await remembered.embed(["release the app"])
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(again[0], standin_vector("release the app"), atol=1e-6)
    assert asked(standin) == [["release the app"]]
    # Known and new texts together: only the new ones go out, rows in the texts' order.
    rows = await remembered.embed(["fix the test", "release the app", "bump a dependency"])
    assert asked(standin)[1:] == [["fix the test", "bump a dependency"]]
    for row, text in zip(
        rows, ["fix the test", "release the app", "bump a dependency"], strict=True
    ):
        np.testing.assert_allclose(row, standin_vector(text), atol=1e-6)
    assert (remembered.hits, remembered.misses) == (2, 3)


async def test_the_backlogs_texts_are_neither_served_nor_kept(
    standin: StandIn, remembered: Remembered
) -> None:
    await remembered.embed(["a memory"])
    await remembered.embed(["a memory", "another"], background=True)
    await remembered.embed(["another"])
    assert asked(standin) == [["a memory"], ["a memory", "another"], ["another"]]


async def test_the_oldest_text_is_forgotten_past_the_size(
    standin: StandIn, remembered: Remembered
) -> None:
    remembered.size = 2
    for text in ("one", "two", "one", "three"):  # "one" used again: "two" is the oldest
        await remembered.embed([text])
    await remembered.embed(["one"])
    await remembered.embed(["two"])
    assert asked(standin) == [["one"], ["two"], ["three"], ["two"]]
