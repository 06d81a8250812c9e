"""A query scored over the in-memory index's data (`postings.py`) with numpy: the same
BM25 as FTS5's bm25() (k1 1.2, b 0.75, FTS5's idf, the row's token count over every
indexed column), times the share of the query's terms a memory holds (classic Lucene's
coordination factor), which FTS5's bm25() cannot do.

Type and scope filters run here, before the `limit` best are taken, so that a filter
never leaves fewer than `limit` matches while more exist."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from app.learning import tokens
from app.search import maxscore
from app.search.postings import Data
from app.search.scoring import K1, B, Filter, Group, Part, Query, norms, passing, scored, weighed

MAX_PREFIX_TERMS = 64  # index terms a prefix stands for: the most frequent
SCOPE_SHARE = 16  # a scope filter's slots scored one by one when at most 1/16 of all
# Pruning pays where scoring every posting costs mostly its passes over every slot: a
# large index, and a query whose terms' postings are at most 1/PRUNE_SHARE of its slots
# (bench/search_paths.py measures both ways per query).
PRUNE_MIN_SLOTS = 200_000
PRUNE_SHARE = 4


def top_matches(
    data: Data,
    token: str,
    terms: list[str],
    limit: int,
    wanted: Filter,
    coordinate: bool,
    stem: Callable[[list[str]], list[str]],
) -> dict[str, float]:
    """The `limit` best live matches in the namespace of `token` that pass `wanted`, best
    first: memory id -> relevance. `terms` are `query_terms`; `stem` gives words' stems
    (FTS5's).

    Three ways to the same answer, the cheapest that applies: the slots of a narrow
    scope filter scored one by one; the terms taken from the most telling down, until the
    rest could not lift any other slot into the best `limit` (Turtle and Flood's
    MaxScore), their slots scored one by one; or every posting of every term."""
    code = data.ns_codes.get(token)
    if code is None or data.live == 0:
        return {}
    wanted_groups = term_groups(data, terms, stem)
    # Each query term is a phrase of its own, as in FTS5: two words with one stem
    # ("float", "floats") count that stem twice. A term's expansions (a prefix's words,
    # synonyms) add their weighted parts, as in FTS5's and PostgreSQL's queries, and a
    # memory holding any of them holds the term once.
    avgdl = data.live_tokens / data.live
    groups = []
    for group, times in Counter(wanted_groups).items():
        parts = [p for t, w in group if (p := _part(data, t, w, avgdl)) is not None]
        groups.append(Group(parts, times, times * sum(p.bound for p in parts)))
    query = Query(data, code, wanted, groups, len(wanted_groups), coordinate, avgdl)
    postings = sum(len(p.slots) for g in groups for p in g.parts)
    found = (
        _in_scope(query)
        or (
            maxscore.pruned(query, limit, PRUNE_SHARE) if _prunes(len(data.ids), postings) else None
        )
        or _every_posting(query)
    )
    return _best(data, *found, limit)


def _prunes(slots: int, postings: int) -> bool:
    return slots >= PRUNE_MIN_SLOTS and postings * PRUNE_SHARE <= slots


def _part(data: Data, term: str, weight: float, avgdl: float) -> Part | None:
    postings = data.postings.get(term)
    if postings is None:
        return None
    slots = np.frombuffer(postings.slots, dtype=np.int32)
    tf = np.frombuffer(postings.tf, dtype=np.float32)
    if data.live < len(data.ids):
        live = np.frombuffer(data.alive, dtype=np.int8)[slots].astype(bool)
        slots, tf = slots[live], tf[live]
    df = len(slots)
    if df == 0:
        return None
    idf = math.log((data.live - df + 0.5) / (df + 0.5))
    if idf <= 0.0:
        idf = 1e-6  # as FTS5 does for terms in more than half the rows
    # A slot's length counts its namespace token and every count posted to it, so it is
    # at least tf + 1, and the part grows with tf: the largest tf at that length bounds it.
    most = float(tf.max())
    bound = idf * most * (K1 + 1) / (most + K1 * (1 - B + B * (most + 1) / avgdl))
    return Part(slots, tf, idf, weight, bound * weight * (1 + 1e-9))


def _in_scope(q: Query) -> tuple[Any, Any] | None:
    """With a scope filter whose rarest (key, value) few slots hold: those slots scored."""
    if not q.wanted.scope:
        return None
    held = q.data.scopes.fewest(q.wanted.scope)
    if len(held) * SCOPE_SHARE > len(q.data.ids):
        return None
    return scored(q, held[passing(q, held)])


def _every_posting(q: Query) -> tuple[Any, Any]:
    n = len(q.data.ids)
    scores = np.zeros(n, dtype=np.float64)
    held = np.zeros(n, dtype=np.float64)  # query terms each slot holds
    matched = np.zeros(n, dtype=bool)  # flatnonzero finds them faster in a bool array
    holder = None  # per slot, the last group of several parts that counted it as held
    for g, group in enumerate(q.groups):
        if len(group.parts) > 1 and holder is None:
            holder = np.full(n, -1, dtype=np.int32)
        for p in group.parts:
            scores[p.slots] += group.times * weighed(p, p.tf, norms(q, p.slots))
            matched[p.slots] = True
            if holder is None:
                held[p.slots] += group.times
            else:
                held[p.slots[holder[p.slots] != g]] += group.times
                holder[p.slots] = g
    found = np.flatnonzero(matched).astype(np.int32)  # every part is > 0: the slots scored
    found = found[passing(q, found)]
    return found, q.values(scores[found], held[found])


def _best(data: Data, found: Any, values: Any, limit: int) -> dict[str, float]:
    """The `limit` best of these slots (ascending) by value, ties by slot."""
    if len(found) > limit:
        # Every match scoring at least the limit-th best, so that ties at the cut are
        # broken as below (by rowid, which slot order follows) and not arbitrarily.
        cut = np.partition(values, len(found) - limit)[len(found) - limit]
        keep = values >= cut
        found, values = found[keep], values[keep]
    best = np.lexsort((found, -values))[:limit]
    return {data.ids[int(found[i])]: float(values[i]) for i in best}


def term_groups(
    data: Data, terms: list[str], stem: Callable[[list[str]], list[str]]
) -> list[tuple[tuple[str, float], ...]]:
    """Each query term's stemmed index tokens and their weights (`tokens.groups`), a
    prefix replaced by the index's terms that start with its stem (FTS5 stems a prefix
    too: `migration*` is `migrat*`), at most MAX_PREFIX_TERMS of the most frequent."""
    groups = tokens.groups(terms)
    words = [t.rstrip(tokens.PREFIX) for g in groups for t, _ in g.tokens]
    stems = iter(stem(words))
    out: list[tuple[tuple[str, float], ...]] = []
    for group in groups:
        stemmed: list[tuple[str, float]] = []
        for t, weight in group.tokens:
            s = next(stems)
            if tokens.is_prefix(t):
                stemmed += [(w, weight) for w in data.starting_with(s, MAX_PREFIX_TERMS)]
            else:
                stemmed.append((s, weight))
        out.append(tuple(stemmed))
    return out
