"""HNSW graphs saved to files, so that a restart with a large namespace loads its graph
instead of building it again (slow at a million vectors). A cache of SQL like the rest:
a graph is used only when the seqs of the rows it was built from are exactly the first
rows the index read for its namespace; otherwise (rows deleted or committed late since
it was saved, another model) it is built again and saved over.

Per namespace and model, two files: `<digest>.usearch` (the graph and its vectors) and
`<digest>.seqs.npy` (its slots' seqs, written last: a graph without it is not used)."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from app.search.vector_space import Index, Space

log = logging.getLogger(__name__)


def stem(directory: Path, *, model: str, dim: int, namespace: str) -> Path:
    key = f"{model}\0{dim}\0{namespace}".encode()
    return directory / hashlib.sha256(key).hexdigest()[:32]


def save(space: Space, at: Path) -> bool:
    """Write the space's graph (every slot it covers) and its seqs; whether it did."""
    if space.graph is None or space.covered == 0:
        return False
    at.parent.mkdir(parents=True, exist_ok=True)
    seqs = np.frombuffer(space.seqs, dtype=np.int64)[: space.covered]
    graph_tmp, seqs_tmp = _tmp(at, ".usearch"), _tmp(at, ".seqs.npy")
    try:
        _path(at, ".seqs.npy").unlink(missing_ok=True)  # the graph below is not this one
        space.graph.save(str(graph_tmp))
        os.replace(graph_tmp, _path(at, ".usearch"))
        with open(seqs_tmp, "wb") as f:
            np.save(f, seqs)
        os.replace(seqs_tmp, _path(at, ".seqs.npy"))
    except OSError:
        log.warning("could not save the vector graph at %s", at, exc_info=True)
        return False
    return True


def restore(space: Space, at: Path) -> bool:
    """Give the space its saved graph if it was built from the rows it holds first."""
    if Index is None or space.graph is None or space.covered:
        return False
    try:
        saved = np.load(_path(at, ".seqs.npy"))
    except (OSError, ValueError):
        return False
    held = np.frombuffer(space.seqs, dtype=np.int64)
    if not 0 < len(saved) <= len(held) or not np.array_equal(saved, held[: len(saved)]):
        return False  # stale: rows deleted or committed late since
    try:
        graph: Any = Index.restore(str(_path(at, ".usearch")))
    except Exception:
        log.warning("could not read the vector graph at %s", at, exc_info=True)
        return False
    if graph is None or graph.size != len(saved) or graph.ndim != space.dim:
        return False
    space.restore(graph)
    return True


def _path(at: Path, suffix: str) -> Path:
    return at.with_name(at.name + suffix)


def _tmp(at: Path, suffix: str) -> Path:
    return at.with_name(f"{at.name}{suffix}.{os.getpid()}.tmp")
