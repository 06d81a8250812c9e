"""Search of memories: one protocol (`Search`), one implementation per database
kind, created in the lifespan and handed out through the app's state.

- `fts5.py`: SQLite, with the in-memory BM25 index of `index.py` (FTS5's query until it
  is built, or when ENGRAM_RECALL__SEARCH_INDEX is off);
- `tsvector.py`: PostgreSQL's tsvector column.
Indexes are caches of SQL, never sources of truth."""

from __future__ import annotations

from app.core.config import Recall
from app.db.backends import Backend
from app.search.base import Ranked, Search
from app.search.fts5 import Fts5Search
from app.search.tsvector import TsvectorSearch


def open_search(backend: Backend, settings: Recall) -> Search:
    """The search of this backend's database (started by the caller)."""
    if backend.name == Fts5Search.backend:
        return Fts5Search(database_file=backend.database_file, use_index=settings.search_index)
    return TsvectorSearch()


__all__ = ["Search", "Ranked", "open_search"]
