"""How search ranks memories: the weights and the query terms (pure, no I/O).

score = text·w_text + criticality·w_crit + confidence·w_conf + value·w_value
        − staleness·w_stale
where text = r / r_best for the engine's relevance r (BM25 on SQLite, ts_rank_cd on
PostgreSQL) relative to the best match of the query, value = (mean reward + 1)/2
clipped to [0, 1] (0.5 before any reward), staleness = days since last use (or update)
/ 365, at most 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.learning.tokens import STOP_WORDS, scan, searched

MAX_TERMS = 32
MIN_PREFIX_CHARS = 2  # `m*` would match a good part of the vocabulary: ignored


@dataclass(frozen=True)
class Weights:
    text: float = 0.6
    criticality: float = 0.15
    confidence: float = 0.1
    value: float = 0.1
    staleness: float = 0.05


WEIGHTS = Weights()
STALE_AFTER_DAYS = 365.0


def query_terms(query: str) -> list[str]:
    """The query's search terms in order, lower case, without repeats: its words (stop
    words and single letters dropped), the forms searched whole (`c++`, `.net`,
    `src/app/main.py`) and prefixes (`mig*`; `*` and `m*` are ignored)."""
    seen: dict[str, None] = {}
    for kind, text in scan(query):
        if kind == "word" and not searched(text):
            continue
        if kind == "prefix" and len(text) - 1 < MIN_PREFIX_CHARS:
            continue
        seen.setdefault(text, None)
    return list(seen)[:MAX_TERMS]


__all__ = ["MAX_TERMS", "STOP_WORDS", "WEIGHTS", "Weights", "query_terms"]
