"""Requests' texts remembered with their vectors: an agent asks again for what it asked
before (a hook embeds a prompt for its kind, then recalls with the same prompt; a task
is recalled at each of its steps), and a vector computed once is not computed again.
The backlog's texts are each embedded once anyway and are not kept."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from app.embeddings.base import Embedder, Vectors

REMEMBERED = 2048  # texts (384 floats each with the local model: 3 MiB)


class Remembered:
    """A started embedder that keeps the vectors of its last REMEMBERED requests' texts."""

    def __init__(self, inner: Embedder, size: int = REMEMBERED) -> None:
        self.inner = inner
        self.model = inner.model
        self.dim = inner.dim
        self.size = size
        self.hits = 0
        self.misses = 0
        self._kept: OrderedDict[str, Any] = OrderedDict()

    async def start(self) -> None:
        await self.inner.start()
        self.model, self.dim = self.inner.model, self.inner.dim

    async def embed(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        if background:
            return await self.inner.embed(texts, background=True)
        rows = np.empty((len(texts), self.dim), dtype=np.float32)
        missing = []
        for i, text in enumerate(texts):
            if (kept := self._kept.get(text)) is None:
                missing.append(i)
            else:
                self._kept.move_to_end(text)
                rows[i] = kept
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            computed = await self.inner.embed([texts[i] for i in missing])
            for i, row in zip(missing, computed, strict=True):
                rows[i] = row
                self._kept[texts[i]] = row.copy()
                self._kept.move_to_end(texts[i])
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return rows

    async def close(self) -> None:
        await self.inner.close()
