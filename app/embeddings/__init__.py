"""Embedders chosen by settings: `local` (onnxruntime), `openai` (compatible endpoints), none."""

from __future__ import annotations

import importlib.util
import logging

from app.core.config import Embeddings
from app.core.errors import StartupRefused
from app.embeddings.base import Embedder, EmbeddingError, EmbeddingUnavailable, Vectors
from app.embeddings.remembered import Remembered

__all__ = [
    "Embedder",
    "EmbeddingError",
    "EmbeddingUnavailable",
    "Vectors",
    "open_embedder",
    "start_embedder",
]

log = logging.getLogger("engram.embeddings")


def open_embedder(settings: Embeddings) -> Embedder | None:
    """The embedder the settings ask for, not yet started; None for lexical search only.

    `auto` is `local` when its packages and files are installed, else None; `local` asked
    for (or a model or tokenizer path set) but missing raises EmbeddingUnavailable saying
    what to install or set."""
    if settings.provider == "none":
        return None
    if settings.provider == "openai":
        from app.embeddings.openai import OpenAIEmbedder

        return OpenAIEmbedder(settings)
    from app.embeddings.local import LocalEmbedder

    explicit = settings.model_path is not None or settings.tokenizer_path is not None
    if settings.provider == "local" or explicit:
        return LocalEmbedder(settings)
    try:
        return LocalEmbedder(settings)
    except EmbeddingUnavailable as exc:
        # Half an install (the runtime without the model's files) is worth a warning.
        half = importlib.util.find_spec("onnxruntime") is not None
        log.log(logging.WARNING if half else logging.INFO, "semantic search is off: %s", exc)
        return None


async def start_embedder(settings: Embeddings) -> Embedder | None:
    """The embedder the settings ask for, started; None for lexical search only. One that
    cannot start is a refusal to start, unless `auto` chose it (then search is lexical)."""
    try:
        embedder = open_embedder(settings)
    except EmbeddingUnavailable as exc:
        raise StartupRefused(f"ENGRAM_EMBEDDINGS__PROVIDER={settings.provider}: {exc}") from exc
    if embedder is None:
        return None
    try:
        await embedder.start()
    except EmbeddingUnavailable as exc:
        await embedder.close()
        if settings.provider != "auto":
            raise StartupRefused(f"ENGRAM_EMBEDDINGS__PROVIDER={settings.provider}: {exc}") from exc
        log.warning("semantic search is off: %s", exc)
        return None
    log.info("semantic search on", extra={"model": embedder.model, "dim": embedder.dim})
    return Remembered(embedder)
