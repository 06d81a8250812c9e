"""The `openai` embedder against a stand-in server speaking /v1/embeddings over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from app.core.config import Embeddings
from app.embeddings import EmbeddingError, EmbeddingUnavailable, open_embedder
from app.embeddings.openai import OpenAIEmbedder
from tests.embeddings.openai_standin import DEFAULT_DIM, StandIn, standin_vector
from tests.server import free_port


@pytest.fixture
def standin() -> Iterator[StandIn]:
    with StandIn().serve() as running:
        yield running


def embedder(base_url: str, **settings: Any) -> OpenAIEmbedder:
    """An embedder of the stand-in's model, retrying at once (the waits are not under test)."""
    config = Embeddings(provider="openai", base_url=base_url, model="standin-embed", **settings)
    return OpenAIEmbedder(config, backoff_s=0.001)


async def test_batches_of_batch_size_in_the_order_of_the_texts(standin: StandIn) -> None:
    texts = [f"memory number {i}" for i in range(70)]
    client = embedder(standin.base_url, batch_size=32)
    try:
        vectors = await client.embed(texts)
    finally:
        await client.close()

    assert [len(seen.body["input"]) for seen in standin.seen] == [32, 32, 6]
    assert [seen.body["model"] for seen in standin.seen] == ["standin-embed"] * 3
    # The stand-in lists each batch's rows backwards: rows are placed by their index.
    expected = np.stack([standin_vector(text) for text in texts])
    assert vectors.shape == (70, DEFAULT_DIM)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


async def test_start_learns_the_size_and_names_the_vectors_by_model_and_size(
    standin: StandIn,
) -> None:
    client = embedder(standin.base_url)
    try:
        await client.start()
        assert (client.dim, client.model) == (DEFAULT_DIM, f"openai:standin-embed@{DEFAULT_DIM}")
        assert (await client.embed([])).shape == (0, DEFAULT_DIM)
    finally:
        await client.close()
    assert "dimensions" not in standin.seen[0].body


async def test_dimensions_are_asked_for(standin: StandIn) -> None:
    client = embedder(standin.base_url, dimensions=16)
    assert (client.dim, client.model) == (16, "openai:standin-embed@16")
    try:
        vectors = await client.embed(["a", "b"])
    finally:
        await client.close()
    assert standin.seen[0].body["dimensions"] == 16
    np.testing.assert_allclose(vectors[1], standin_vector("b", 16), atol=1e-6)


async def test_the_key_is_sent_as_a_bearer_token() -> None:
    with StandIn(api_key="sk-right").serve() as standin:
        client = embedder(standin.base_url, api_key="sk-right")
        try:
            await client.embed(["hello"])
        finally:
            await client.close()
        assert standin.seen[0].headers["authorization"] == "Bearer sk-right"


async def test_no_key_no_authorization_header(standin: StandIn) -> None:
    client = embedder(standin.base_url)
    try:
        await client.embed(["hello"])
    finally:
        await client.close()
    assert "authorization" not in standin.seen[0].headers


async def test_a_wrong_key_fails_at_once_with_the_servers_message() -> None:
    with StandIn(api_key="sk-right").serve() as standin:
        client = embedder(standin.base_url, api_key="sk-wrong", max_retries=3)
        try:
            with pytest.raises(EmbeddingError) as raised:
                await client.embed(["hello"])
        finally:
            await client.close()
        assert len(standin.seen) == 1
    message = str(raised.value)
    assert "401" in message
    assert "Incorrect API key provided" in message
    assert "ENGRAM_EMBEDDINGS__API_KEY" in message
    assert "sk-wrong" not in message


@pytest.mark.parametrize("status", ["429", "500", "502", "503"])
async def test_rate_limits_and_server_errors_are_retried(standin: StandIn, status: str) -> None:
    standin.then(status, status)
    client = embedder(standin.base_url, max_retries=2)
    try:
        vectors = await client.embed(["retried"])
    finally:
        await client.close()
    assert len(standin.seen) == 3
    np.testing.assert_allclose(vectors[0], standin_vector("retried"), atol=1e-6)


async def test_retry_after_is_honoured_up_to_the_cap() -> None:
    # An hour asked for: the cap (50 ms here) decides, or the test would time out.
    with StandIn(retry_after="3600").serve() as standin:
        standin.then("429")
        config = Embeddings(provider="openai", base_url=standin.base_url, model="standin-embed")
        client = OpenAIEmbedder(config, backoff_s=0.001, max_wait_s=0.05)
        try:
            vectors = await client.embed(["after a while"])
        finally:
            await client.close()
        assert len(standin.seen) == 2
    assert vectors.shape == (1, DEFAULT_DIM)


async def test_gives_up_after_max_retries_saying_why(standin: StandIn) -> None:
    standin.then(*["503"] * 5)
    client = embedder(standin.base_url, max_retries=2)
    try:
        with pytest.raises(EmbeddingError) as raised:
            await client.embed(["never"])
    finally:
        await client.close()
    assert len(standin.seen) == 3
    message = str(raised.value)
    assert "failed 3 time(s)" in message
    assert "503" in message
    assert "stand-in told to fail with 503" in message


async def test_a_server_that_does_not_answer_times_out(standin: StandIn) -> None:
    standin.then("hang")
    client = embedder(standin.base_url, timeout_s=1.0, max_retries=0)
    try:
        with pytest.raises(EmbeddingError, match="timed out"):
            await client.embed(["slow"])
    finally:
        await client.close()


async def test_a_timeout_is_retried(standin: StandIn) -> None:
    standin.then("hang")
    client = embedder(standin.base_url, timeout_s=1.0, max_retries=1)
    try:
        vectors = await client.embed(["slow, then fine"])
    finally:
        await client.close()
    assert len(standin.seen) == 2
    np.testing.assert_allclose(vectors[0], standin_vector("slow, then fine"), atol=1e-6)


async def test_nothing_listening_is_retried_then_a_clear_error() -> None:
    client = embedder(f"http://127.0.0.1:{free_port()}/v1", max_retries=1)
    try:
        with pytest.raises(EmbeddingError, match=r"failed 2 time\(s\).*cannot connect"):
            await client.embed(["anyone?"])
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("step", "says"),
    [
        ("short", "returned 1 embeddings for 2 texts"),
        ("wide", f"vectors of {DEFAULT_DIM + 1} numbers, expected {DEFAULT_DIM}"),
        ("text", "not lists of numbers"),
    ],
)
async def test_a_malformed_answer_says_what_was_wrong(
    standin: StandIn, step: str, says: str
) -> None:
    client = embedder(standin.base_url, dimensions=DEFAULT_DIM, max_retries=3)
    standin.then(step)
    try:
        with pytest.raises(EmbeddingError) as raised:
            await client.embed(["one", "two"])
    finally:
        await client.close()
    assert says in str(raised.value)
    # A malformed answer is not retried: the same request would get the same answer.
    assert len(standin.seen) == 1


async def test_start_on_an_endpoint_that_refuses_is_unavailable() -> None:
    with StandIn(api_key="sk-right").serve() as standin:
        client = open_embedder(
            Embeddings(provider="openai", base_url=standin.base_url, api_key="sk-wrong")
        )
        assert client is not None
        try:
            with pytest.raises(EmbeddingUnavailable, match="401"):
                await client.start()
        finally:
            await client.close()


async def test_empty_texts_are_embedded(standin: StandIn) -> None:
    client = embedder(standin.base_url)
    try:
        vectors = await client.embed(["", "x"])
    finally:
        await client.close()
    assert vectors.shape == (2, DEFAULT_DIM)
    assert all(isinstance(text, str) and text for text in standin.seen[0].body["input"])


async def test_a_redirect_is_not_followed_but_named(standin: StandIn) -> None:
    standin.then("redirect")
    client = embedder(standin.base_url, max_retries=2)
    try:
        with pytest.raises(EmbeddingError, match="redirects to /v2/embeddings") as raised:
            await client.embed(["moved"])
    finally:
        await client.close()
    assert "ENGRAM_EMBEDDINGS__BASE_URL" in str(raised.value)
    assert len(standin.seen) == 1


async def test_credentials_in_the_url_stay_out_of_errors(standin: StandIn) -> None:
    standin.then("400")
    client = embedder(standin.base_url.replace("http://", "http://user:hunter2@"))
    try:
        with pytest.raises(EmbeddingError) as raised:
            await client.embed(["x"])
    finally:
        await client.close()
    assert "400" in str(raised.value)
    assert "hunter2" not in str(raised.value)


@pytest.mark.parametrize("url", ["api.openai.com/v1", "ftp://127.0.0.1/v1", "http:///v1"])
def test_a_base_url_that_is_not_http_names_the_setting(url: str) -> None:
    with pytest.raises(EmbeddingUnavailable, match="ENGRAM_EMBEDDINGS__BASE_URL"):
        open_embedder(Embeddings(provider="openai", base_url=url))
