"""The in-memory index's data: postings per term, each slot's type and scope as
inverted lists, and the namespace token of the full-text table (`index.py` runs the
index, `loading.py` fills this data, `bm25.py` scores a query over it)."""

from __future__ import annotations

import bisect
import heapq
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson


def ns_token(namespace: str) -> str:
    """The namespace's token in memories_fts ('n' + hex + 'x')."""
    return "n" + namespace.encode().hex().upper() + "x"


@dataclass
class Postings:
    slots: array[int] = field(default_factory=lambda: array("i"))
    tf: array[float] = field(default_factory=lambda: array("f"))  # small integers


class _Scopes:
    """Each slot's scope as inverted lists: (key, value) -> the slots whose scope holds
    it, and per slot how many ids (keys but level) its scope has. A filter then reads the
    lists of the pairs it names instead of testing every scope.

    Many scopes are unique (a reflection's holds its episode's id): a pair that one slot
    holds keeps it as an int, not an array, and the pair is one string, not a tuple."""

    def __init__(self) -> None:
        self.ids: array[int] = array("i")  # per slot; -1: no memory row, or not an object
        self.holders: dict[str, int | array[int]] = {}
        self._masks: dict[str, tuple[Any, int]] = {}  # `_mask`

    def add(self, stored: str | None) -> None:
        slot = len(self.ids)
        try:
            scope = orjson.loads(stored) if stored is not None else None
        except orjson.JSONDecodeError:
            scope = None
        if not isinstance(scope, dict):
            self.ids.append(-1)  # never passes a filter
            return
        self.ids.append(sum(1 for k in scope if k != "level"))
        for key, value in scope.items():
            if not isinstance(value, str):  # filters hold strings: others never equal
                continue
            pair = _pair(key, value)
            held = self.holders.get(pair)
            if held is None:
                self.holders[pair] = slot
            elif isinstance(held, int):
                self.holders[pair] = array("i", (held, slot))
            else:
                held.append(slot)

    def _slots(self, key: str, value: str) -> Any:
        """The slots whose scope holds (key, value), ascending (slots are added in order)."""
        held = self.holders.get(_pair(key, value))
        if held is None:
            return np.zeros(0, dtype=np.int32)
        if isinstance(held, int):
            return np.array([held], dtype=np.int32)
        return np.frombuffer(held, dtype=np.int32)

    def _held(self, pairs: list[tuple[str, str]], at: Any) -> Any:
        """Per slot of `at` (ascending; None: every slot), how many of the pairs its
        scope holds: each slot looked up in a pair's slots when they are many, else
        the pair's slots marked (a scope holds a key once)."""
        held = np.zeros(len(self.ids) if at is None else len(at), dtype=np.int32)
        for key, value in pairs:
            slots = self._slots(key, value)
            if len(slots) == 0:
                continue
            if at is None:
                held[slots] += 1
            elif len(slots) * MASKED_SHARE >= len(self.ids):
                held += self._mask(_pair(key, value), slots)[at]
            elif len(at) * 16 < len(slots):
                pos = np.minimum(np.searchsorted(slots, at), len(slots) - 1)
                held += slots[pos] == at
            else:
                mask = np.zeros(len(self.ids), dtype=bool)
                mask[slots] = True
                held += mask[at]
        return held

    def _mask(self, pair: str, slots: Any) -> Any:
        """Per slot, whether it holds this pair that many slots hold: kept between
        queries and extended with the slots added since (a pair's slots only grow)."""
        mask, marked = self._masks.get(pair, (np.zeros(0, dtype=bool), 0))
        if len(mask) < len(self.ids):
            mask = np.concatenate([mask, np.zeros(len(self.ids) - len(mask) + 4096, bool)])
        mask[slots[marked:]] = True
        self._masks[pair] = (mask, len(slots))
        return mask

    def _ids(self, at: Any) -> Any:
        ids = np.frombuffer(self.ids, dtype=np.int32)
        return ids if at is None else ids[at]

    def applying_to(self, request: Mapping[str, str], at: Any = None) -> Any:
        """Per slot of `at` (None: every slot): every id of its scope (all keys but
        level) equals the request's (`app.learning.features.scope_compatible`)."""
        pairs = [(k, v) for k, v in request.items() if k != "level"]
        return self._held(pairs, at) == self._ids(at)

    def matching(self, wanted: Mapping[str, str], at: Any = None) -> Any:
        """Per slot of `at` (None: every slot): its scope holds every (key, value)."""
        return (self._held(list(wanted.items()), at) == len(wanted)) & (self._ids(at) >= 0)

    def fewest(self, wanted: Mapping[str, str]) -> Any:
        """The slots holding the wanted (key, value) that the fewest hold, ascending: a
        superset of those matching them all."""
        return min((self._slots(k, v) for k, v in wanted.items()), key=len)


MASKED_SHARE = 16  # a pair held by at least 1/16 of the slots keeps its mask


def _pair(key: str, value: str) -> str:
    return f"{len(key)}:{key}{value}"  # the length keeps ("a", "bc") apart from ("ab", "c")


class Data:
    """Slots (one per full-text row ever seen since the last build) and postings."""

    def __init__(self) -> None:
        self.rowids: array[int] = array("q")
        self.lengths: array[float] = array("d")  # tokens in every indexed column
        self.alive: array[int] = array("b")
        self.ns: array[int] = array("i")
        self.types: array[int] = array("i")
        self.ids: list[str] = []
        self.slot_of: dict[str, dict[str, int]] = {}  # ns token -> memory id -> slot
        self.ns_codes: dict[str, int] = {}
        self.type_codes: dict[str, int] = {}
        self.scopes = _Scopes()
        self.postings: dict[str, Postings] = {}
        # The terms in order, for prefix queries; new terms wait in `_new_terms` until
        # the next one (sorting a sorted list with a sorted run appended is one merge).
        self._terms: list[str] = []
        self._new_terms: list[str] = []
        self.live = 0
        self.live_tokens = 0.0
        self.cursor = 0  # highest rowid held by a live slot
        self.deletion_seq = 0

    def code(self, table: dict[str, int], name: str) -> int:
        return table.setdefault(name, len(table))

    def add(
        self, rowid: int, memory_id: str, token: str, memory: tuple[str, str | None] | None
    ) -> int:
        """A new slot; `memory` is the row's (type, scope as stored), None without a row."""
        type_, scope = memory or ("", None)
        slot = len(self.ids)
        self.rowids.append(rowid)
        self.lengths.append(1.0)  # the namespace column's one token; the text's are posted
        self.alive.append(1)
        self.ns.append(self.code(self.ns_codes, token))
        self.types.append(self.code(self.type_codes, type_))
        self.scopes.add(scope)
        self.ids.append(memory_id)
        slots = self.slot_of.setdefault(token, {})
        old = slots.get(memory_id)
        if old is not None:
            self.kill(old)
        slots[memory_id] = slot
        self.live += 1
        self.live_tokens += 1.0
        self.cursor = max(self.cursor, rowid)
        return slot

    def kill(self, slot: int) -> None:
        if self.alive[slot]:
            self.alive[slot] = 0
            self.live -= 1
            self.live_tokens -= self.lengths[slot]

    def post(self, term: str, slot: int, tf: int) -> None:
        """`tf` occurrences of the term in the slot's text (counted in its length)."""
        postings = self.postings.get(term)
        if postings is None:
            postings = self.postings[term] = Postings()
            self._new_terms.append(term)
        postings.slots.append(slot)
        postings.tf.append(tf)
        self.lengths[slot] += tf
        self.live_tokens += tf

    def put(self, term: str, postings: Postings) -> None:
        """A term's postings read back whole (`snapshot.py`)."""
        if term not in self.postings:
            self._new_terms.append(term)
        self.postings[term] = postings

    def starting_with(self, prefix: str, limit: int) -> list[str]:
        """The terms that start with `prefix`; the `limit` held by most slots if more."""
        if self._new_terms:
            self._new_terms.sort()
            self._terms += self._new_terms
            self._terms.sort()
            self._new_terms = []
        lo = bisect.bisect_left(self._terms, prefix)
        hi = bisect.bisect_left(self._terms, prefix + "\U0010ffff")
        found = self._terms[lo:hi]
        if len(found) > limit:
            found = heapq.nlargest(limit, found, key=lambda t: len(self.postings[t].slots))
        return found
