"""Search of memories: one protocol (`Search`), one implementation per database
kind, created in the lifespan and handed out through the app's state.

- `fts5.py`: SQLite and libSQL, with the in-memory BM25 index of `index.py` on a SQLite
  file (FTS5's query until it is built, when ENGRAM_RECALL__SEARCH_INDEX is off, and on
  libSQL);
- `tsvector.py`: PostgreSQL's tsvector column.
Indexes are caches of SQL, never sources of truth."""

from __future__ import annotations

from pathlib import Path

from app.core.config import Settings
from app.db.backends import Backend
from app.embeddings.base import Embedder
from app.search.base import Ranked, Search
from app.search.fts5 import Fts5Search
from app.search.hybrid import Found, Hit, Mode, NoEmbedder, Retrieval
from app.search.tsvector import TsvectorSearch
from app.search.vectors import VectorIndex


def open_search(backend: Backend, settings: Settings, *, embedder: Embedder | None) -> Retrieval:
    """The search of this backend's database (started by the caller): BM25, and with an
    embedder the vector index of its model."""
    lexical: Search
    if backend.engine.dialect.name == Fts5Search.dialect:
        lexical = Fts5Search(
            database_file=backend.database_file,
            use_index=settings.recall.search_index,
            local_probe=backend.local_probe,
        )
    else:
        lexical = TsvectorSearch()
    if embedder is None:
        return Retrieval(lexical)
    # HNSW graphs are saved beside a SQLite file, so that a restart reads them back
    # instead of building them again; elsewhere they are built at each start.
    cache = Path(backend.database_file).parent / "vectors" if backend.database_file else None
    vectors = VectorIndex(
        backend.engine,
        model=embedder.model,
        dim=embedder.dim,
        exact_max=settings.embeddings.exact_max,
        cache_dir=cache,
    )
    return Retrieval(lexical, embedder=embedder, vectors=vectors, rrf_k=settings.embeddings.rrf_k)


__all__ = ["Found", "Hit", "Mode", "NoEmbedder", "Ranked", "Retrieval", "Search", "open_search"]
