"""What scoring a query over the in-memory index's data shares between its ways
(`bm25.py` prepares the query and picks the way; `maxscore.py` prunes): the query's terms
and filters, the exact score of given slots, and the filters on given slots."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.search.postings import Data

K1 = 1.2
B = 0.75


@dataclass(frozen=True, slots=True)
class Filter:
    types: Sequence[str] | None
    scope: Mapping[str, str] | None
    applies_to: Mapping[str, str] | None


@dataclass(frozen=True, slots=True)
class Part:
    """One index term of a query term: its live slots (ascending) and their counts."""

    slots: Any
    tf: Any  # float32, per slot
    idf: float
    weight: float
    bound: float  # the most it can give a slot, weight included


@dataclass(frozen=True, slots=True)
class Group:
    """A query term: its parts (several for a prefix or synonyms), held once."""

    parts: list[Part]
    times: int  # the term's count in the query
    bound: float  # the most the term can add to a slot's score


@dataclass(frozen=True, slots=True)
class Query:
    data: Data
    code: int  # the namespace's
    wanted: Filter
    groups: list[Group]
    terms: int  # query terms, a term counted as often as it comes
    coordinate: bool
    avgdl: float

    def values(self, scores: Any, held: Any) -> Any:
        return scores * (held / self.terms) if self.coordinate else scores


def norms(q: Query, at: Any) -> Any:
    """BM25's length normalisation of these slots."""
    return K1 * (1 - B + B * np.frombuffer(q.data.lengths, dtype=np.float64)[at] / q.avgdl)


def weighed(p: Part, tf: Any, norm: Any) -> Any:
    """The part's BM25 value (FTS5's bm25()) at these counts and normalisations, times
    its weight: every way to an answer computes it here, so their scores are the same."""
    tf = tf.astype(np.float64)
    value = p.idf * tf * (K1 + 1) / (tf + norm)
    return value * p.weight if p.weight != 1.0 else value


def score_at(q: Query, at: Any) -> tuple[Any, Any]:
    """The scores and held query terms of these slots (ascending), as `_every_posting`
    computes them, each slot found in each part's postings by bisection."""
    norm = norms(q, at)
    scores = np.zeros(len(at), dtype=np.float64)
    held = np.zeros(len(at), dtype=np.float64)
    for group in q.groups:
        present = np.zeros(len(at), dtype=bool)
        for p in group.parts:
            hit, pos = _intersect(at, p.slots)
            scores[hit] += group.times * weighed(p, p.tf[pos], norm[hit])
            present[hit] = True
        held[present] += group.times
    return scores, held


def scored(q: Query, at: Any) -> tuple[Any, Any]:
    """Of these slots (ascending, passing the filters), those holding a query term, and
    their values."""
    scores, held = score_at(q, at)
    some = held > 0
    return at[some], q.values(scores[some], held[some])


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


def passing(q: Query, at: Any) -> Any:
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
