"""A query scored over the in-memory index's data (`postings.py`) with numpy: the same
BM25 as FTS5's bm25() (k1 1.2, b 0.75, FTS5's idf, the row's token count over every
indexed column), times the share of the query's terms a memory holds (classic Lucene's
coordination factor), which FTS5's bm25() cannot do.

Type and scope filters run here, before the `limit` best are taken, so that a filter
never leaves fewer than `limit` matches while more exist."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.learning import tokens
from app.search.postings import Data

K1 = 1.2
MAX_PREFIX_TERMS = 64  # index terms a prefix stands for: the most frequent
B = 0.75


@dataclass(frozen=True, slots=True)
class Filter:
    types: Sequence[str] | None
    scope: Mapping[str, str] | None
    applies_to: Mapping[str, str] | None


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
    (FTS5's)."""
    code = data.ns_codes.get(token)
    if code is None or data.live == 0:
        return {}
    n = len(data.ids)
    alive = np.frombuffer(data.alive, dtype=np.int8)
    lengths = np.frombuffer(data.lengths, dtype=np.float64)
    scores = np.zeros(n, dtype=np.float64)
    held = np.zeros(n, dtype=np.float64)  # query terms each slot holds
    matched = np.zeros(n, dtype=bool)  # finding them in a bool array is 8x cheaper
    total = float(data.live)
    avgdl = data.live_tokens / total
    any_dead = data.live < n

    def part(stemmed: str) -> tuple[Any, Any] | None:
        """The term's live slots and each one's BM25 part."""
        postings = data.postings.get(stemmed)
        if postings is None:
            return None
        slots = np.frombuffer(postings.slots, dtype=np.int32)
        tf = np.frombuffer(postings.tf, dtype=np.float32).astype(np.float64)
        if any_dead:
            live = alive[slots].astype(bool)
            slots, tf = slots[live], tf[live]
        df = len(slots)
        if df == 0:
            return None
        idf = math.log((total - df + 0.5) / (df + 0.5))
        if idf <= 0.0:
            idf = 1e-6  # as FTS5 does for terms in more than half the rows
        norm = K1 * (1 - B + B * lengths[slots] / avgdl)
        return slots, idf * tf * (K1 + 1) / (tf + norm)

    # Each query term is a phrase of its own, as in FTS5: two words with one stem
    # ("float", "floats") count that stem twice. A term's expansions (a prefix's words,
    # synonyms) add their weighted parts, as in FTS5's and PostgreSQL's queries, and a
    # memory holding any of them holds the term once.
    wanted_groups = term_groups(data, terms, stem)
    holder = None  # per slot, the last group of several parts that counted it as held
    for g, (group, times) in enumerate(Counter(wanted_groups).items()):
        found_parts = [(p, w) for t, w in group if (p := part(t)) is not None]
        if len(found_parts) > 1 and holder is None:
            holder = np.full(n, -1, dtype=np.int32)
        for (slots, value), weight in found_parts:
            scores[slots] += times * (value * weight if weight != 1.0 else value)
            matched[slots] = True
            if holder is None:
                held[slots] += times
            else:
                held[slots[holder[slots] != g]] += times
                holder[slots] = g
    found = np.flatnonzero(matched)  # every term's part is > 0: the slots scored
    found = found[np.frombuffer(data.ns, dtype=np.int32)[found] == code]
    if wanted.types is not None:
        codes = [data.type_codes[t] for t in wanted.types if t in data.type_codes]
        found = found[np.isin(np.frombuffer(data.types, dtype=np.int32)[found], codes)]
    if wanted.scope is not None:
        found = found[data.scopes.matching(wanted.scope)[found]]
    if wanted.applies_to is not None:
        found = found[data.scopes.applying_to(wanted.applies_to)[found]]
    values = scores[found]
    if coordinate and wanted_groups:
        values *= held[found] / len(wanted_groups)
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
