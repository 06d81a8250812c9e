"""How search ranks memories: the weights and the query terms (pure, no I/O).

score = text·w_text + criticality·w_crit + confidence·w_conf + value·w_value
        − staleness·w_stale
where text = r / r_best for the engine's relevance r (BM25 on SQLite, ts_rank_cd on
PostgreSQL) relative to the best match of the query, value = (mean reward + 1)/2
clipped to [0, 1] (0.5 before any reward), staleness = days since last use (or update)
/ 365, at most 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves""".split()
)
MAX_TERMS = 32
_TOKEN = re.compile(r"[^\W_]+")  # runs of letters and digits, any script


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
    """Lower-cased word tokens of the query, stop words and repeats removed, in order."""
    seen: dict[str, None] = {}
    for token in _TOKEN.findall(query.lower()):
        if len(token) > 1 and token not in STOP_WORDS:
            seen.setdefault(token, None)
    return list(seen)[:MAX_TERMS]
