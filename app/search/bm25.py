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
SCOPE_SHARE = 16  # a scope filter's slots scored one by one when at most 1/16 of all
# Pruning pays where scoring every posting costs mostly its passes over every slot: a
# large index, and a query whose terms' postings are at most 1/PRUNE_SHARE of its slots
# (bench/search_paths.py measures both ways per query).
PRUNE_MIN_SLOTS = 200_000
PRUNE_SHARE = 4


@dataclass(frozen=True, slots=True)
class Filter:
    types: Sequence[str] | None
    scope: Mapping[str, str] | None
    applies_to: Mapping[str, str] | None


@dataclass(frozen=True, slots=True)
class _Part:
    """One index term of a query term: its live slots (ascending) and their counts."""

    slots: Any
    tf: Any  # float32, per slot
    idf: float
    weight: float
    bound: float  # the most it can give a slot, weight included


@dataclass(frozen=True, slots=True)
class _Group:
    """A query term: its parts (several for a prefix or synonyms), held once."""

    parts: list[_Part]
    times: int  # the term's count in the query
    bound: float  # the most the term can add to a slot's score


@dataclass(frozen=True, slots=True)
class _Query:
    data: Data
    code: int  # the namespace's
    wanted: Filter
    groups: list[_Group]
    terms: int  # query terms, a term counted as often as it comes
    coordinate: bool
    avgdl: float

    def values(self, scores: Any, held: Any) -> Any:
        return scores * (held / self.terms) if self.coordinate else scores


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
        groups.append(_Group(parts, times, times * sum(p.bound for p in parts)))
    query = _Query(data, code, wanted, groups, len(wanted_groups), coordinate, avgdl)
    postings = sum(len(p.slots) for g in groups for p in g.parts)
    found = (
        _in_scope(query)
        or (_pruned(query, limit) if _prunes(len(data.ids), postings) else None)
        or _every_posting(query)
    )
    return _best(data, *found, limit)


def _prunes(slots: int, postings: int) -> bool:
    return slots >= PRUNE_MIN_SLOTS and postings * PRUNE_SHARE <= slots


def _part(data: Data, term: str, weight: float, avgdl: float) -> _Part | None:
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
    return _Part(slots, tf, idf, weight, bound * weight * (1 + 1e-9))


def _in_scope(q: _Query) -> tuple[Any, Any] | None:
    """With a scope filter whose rarest (key, value) few slots hold: those slots scored."""
    if not q.wanted.scope:
        return None
    held = q.data.scopes.fewest(q.wanted.scope)
    if len(held) * SCOPE_SHARE > len(q.data.ids):
        return None
    at = held[_passing(q, held)]
    scores, count = _score_at(q, at)
    some = count > 0
    return at[some], q.values(scores[some], count[some])


def _pruned(q: _Query, limit: int) -> tuple[Any, Any] | None:
    """MaxScore, a batch at a time. The terms that can add most are read first, each
    slot's partial score summed from their postings, until what the other terms could
    add to a slot holding none of these is below a threshold: the `limit`-th best exact
    value among the slots leading on their partial scores. Only the slots whose partial
    score plus what the other terms could add reach the threshold are then scored in
    full. None when that would read more than a PRUNE_SHARE of the slots' postings."""
    order = sorted((g for g in q.groups if g.parts), key=lambda g: g.bound, reverse=True)
    if not order:
        return np.zeros(0, dtype=np.int32), np.zeros(0)
    n = len(q.data.ids)
    lengths = np.frombuffer(q.data.lengths, dtype=np.float64)
    partial = np.zeros(n, dtype=np.float64)  # over the terms read
    held = np.zeros(n, dtype=np.float64)  # terms read that a slot holds, or more
    seen = np.zeros(n, dtype=bool)
    batches: list[Any] = []
    read, threshold = 0, -math.inf
    for j, group in enumerate(order):
        read += sum(len(p.slots) for p in group.parts)
        if read * PRUNE_SHARE > n:
            return None
        for p in group.parts:
            tf = p.tf.astype(np.float64)
            norm = K1 * (1 - B + B * lengths[p.slots] / q.avgdl)
            partial[p.slots] += group.times * p.weight * p.idf * tf * (K1 + 1) / (tf + norm)
            held[p.slots] += group.times  # a slot holding two parts: counted twice, a bound
            new = p.slots[~seen[p.slots]]
            seen[new] = True
            batches.append(new)
        slots = np.concatenate(batches)
        batches = [slots]
        left = order[j + 1 :]
        bounds, times = sum(g.bound for g in left), sum(g.times for g in left)
        best = _leading(q, slots, partial, held, limit)
        if len(best[1]) >= limit:
            threshold = max(threshold, float(np.partition(best[1], -limit)[-limit]))
        if not left or _most(q, bounds, 0.0, times, 0.0) < threshold:
            break
    # Every slot reaching the threshold holds one of the terms read; those that can.
    can = _most(q, bounds, partial[slots], times, held[slots]) >= threshold
    slots = np.sort(slots[can])
    slots = slots[_passing(q, slots)]
    scores, count = _score_at(q, slots)
    some = count > 0
    return slots[some], q.values(scores[some], count[some])


def _most(q: _Query, bounds: float, partial: Any, times: int, held: Any) -> Any:
    """The most a slot's value can be with this partial score and these terms held when
    the terms left can add at most `bounds` and `times` more."""
    most = (partial + bounds) * ((held + times) / q.terms if q.coordinate else 1.0)
    return most * (1 + 1e-9)  # the partial sums ran in another order than the exact ones


def _leading(q: _Query, slots: Any, partial: Any, held: Any, limit: int) -> tuple[Any, Any]:
    """The slots leading on their partial values that pass the filters (at least `limit`
    of them when that many of these slots do), and their exact values."""
    approx = partial[slots] * (held[slots] / q.terms if q.coordinate else 1.0)
    take = 4 * limit
    while True:
        if take >= len(slots):
            lead = np.sort(slots)
        else:
            lead = np.sort(slots[np.argpartition(approx, -take)[-take:]])
        lead = lead[_passing(q, lead)]
        if len(lead) >= limit or take >= len(slots):
            scores, count = _score_at(q, lead)
            return lead, q.values(scores, count)
        take *= 8


def _every_posting(q: _Query) -> tuple[Any, Any]:
    n = len(q.data.ids)
    lengths = np.frombuffer(q.data.lengths, dtype=np.float64)
    scores = np.zeros(n, dtype=np.float64)
    held = np.zeros(n, dtype=np.float64)  # query terms each slot holds
    matched = np.zeros(n, dtype=bool)  # finding them in a bool array is 8x cheaper
    holder = None  # per slot, the last group of several parts that counted it as held
    for g, group in enumerate(q.groups):
        if len(group.parts) > 1 and holder is None:
            holder = np.full(n, -1, dtype=np.int32)
        for p in group.parts:
            tf = p.tf.astype(np.float64)
            norm = K1 * (1 - B + B * lengths[p.slots] / q.avgdl)
            value = p.idf * tf * (K1 + 1) / (tf + norm)
            scores[p.slots] += group.times * (value * p.weight if p.weight != 1.0 else value)
            matched[p.slots] = True
            if holder is None:
                held[p.slots] += group.times
            else:
                held[p.slots[holder[p.slots] != g]] += group.times
                holder[p.slots] = g
    found = np.flatnonzero(matched).astype(np.int32)  # every part is > 0: the slots scored
    found = found[_passing(q, found)]
    return found, q.values(scores[found], held[found])


def _score_at(q: _Query, at: Any) -> tuple[Any, Any]:
    """The scores and held query terms of these slots (ascending), as `_every_posting`
    computes them, each slot found in each part's postings by bisection."""
    lengths = np.frombuffer(q.data.lengths, dtype=np.float64)[at]
    norms = K1 * (1 - B + B * lengths / q.avgdl)
    scores = np.zeros(len(at), dtype=np.float64)
    held = np.zeros(len(at), dtype=np.float64)
    for group in q.groups:
        present = np.zeros(len(at), dtype=bool)
        for p in group.parts:
            hit, pos = _intersect(at, p.slots)
            tf = p.tf[pos].astype(np.float64)
            value = p.idf * tf * (K1 + 1) / (tf + norms[hit])
            scores[hit] += group.times * (value * p.weight if p.weight != 1.0 else value)
            present[hit] = True
        held[present] += group.times
    return scores, held


def _intersect(at: Any, slots: Any) -> tuple[Any, Any]:
    """Where the slots both ascending arrays hold are in each: the shorter one's looked
    up in the longer one by bisection."""
    if len(at) <= len(slots):
        pos = np.minimum(np.searchsorted(slots, at), len(slots) - 1)
        hit = np.flatnonzero(slots[pos] == at)
        return hit, pos[hit]
    pos = np.minimum(np.searchsorted(at, slots), len(at) - 1)
    hit = np.flatnonzero(at[pos] == slots)
    return pos[hit], hit


def _passing(q: _Query, at: Any) -> Any:
    """Which of these slots (ascending) are live, in the namespace and pass the filters."""
    data, wanted = q.data, q.wanted
    ok = np.frombuffer(data.ns, dtype=np.int32)[at] == q.code
    if data.live < len(data.ids):
        ok &= np.frombuffer(data.alive, dtype=np.int8)[at].astype(bool)
    if wanted.types is not None:
        codes = [data.type_codes[t] for t in wanted.types if t in data.type_codes]
        ok &= np.isin(np.frombuffer(data.types, dtype=np.int32)[at], codes)
    if wanted.scope is not None:
        ok &= data.scopes.matching(wanted.scope, at)
    if wanted.applies_to is not None:
        ok &= data.scopes.applying_to(wanted.applies_to, at)
    return ok


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
