"""The protocol every embedder follows, and the errors it raises."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]
T = TypeVar("T")


class EmbeddingError(Exception):
    """A call to the embedder failed after its retries."""


class EmbeddingUnavailable(EmbeddingError):
    """The embedder cannot start: a package or file is missing, or a setting is wrong."""


class Embedder(Protocol):
    """Turns texts into unit vectors; `model` names the vector space, `dim` its size."""

    # Stored with every vector: vectors of another model id are never compared with these.
    model: str
    dim: int

    async def start(self) -> None:
        """Load or probe the model; raises EmbeddingUnavailable."""

    async def embed(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        """(len(texts), dim) float32 rows of norm 1; raises EmbeddingError. `background`:
        the backlog's texts, which must not slow requests (a local model runs them below
        the API's threads)."""

    async def close(self) -> None:
        """Release the model, threads and connections."""


def normalised(rows: npt.ArrayLike) -> Vectors:
    """`rows` as float32, each scaled to norm 1 (a zero row stays zero)."""
    matrix = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    out: Vectors = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return out


def batches(items: Sequence[T], size: int) -> list[Sequence[T]]:
    """`items` cut into runs of at most `size`, in order."""
    return [items[i : i + size] for i in range(0, len(items), size)]
