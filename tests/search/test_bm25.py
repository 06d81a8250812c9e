"""A query's three ways to its answer (`app/search/bm25.py`): a narrow scope's slots
scored one by one, terms pruned (MaxScore), every posting. Each gives exactly what every
posting gives (ids, order and scores to the bit), on a real database file with common and
rare words, prefixes, repeated words, deleted rows, types and scopes."""

from __future__ import annotations

import random
from typing import Any

import pytest

from app.learning.ranking import query_terms
from app.search import bm25
from tests.conftest import DB_URL
from tests.search.test_term_index import TYPES, Db, built, db, row

pytestmark = pytest.mark.skipif(DB_URL is not None, reason="SQLite's index")
__all__ = ["db"]  # the fixture, imported for these tests

# A long tail: the first words are in most memories, the last in a few.
VOCABULARY = [f"w{i}" for i in range(400)]
WAYS = {
    "every posting": {"SCOPE_SHARE": 10**9, "PRUNE_SHARE": 10**9},
    "pruned": {"SCOPE_SHARE": 10**9, "PRUNE_SHARE": 0, "PRUNE_MIN_SLOTS": 0},
    "narrow scope": {"SCOPE_SHARE": 0, "PRUNE_SHARE": 0, "PRUNE_MIN_SLOTS": 0},
    "default": {},
}


def text(rng: random.Random) -> str:
    words = [
        VOCABULARY[min(int(rng.paretovariate(0.6)) - 1, 399)] for _ in range(rng.randint(2, 30))
    ]
    return " ".join(words)


def scope(rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {"level": rng.choice(["global", "project", "task"])}
    if rng.random() < 0.7:
        out["project"] = f"p{min(int(rng.expovariate(0.5)), 6)}"
    if rng.random() < 0.2:
        out["task_id"] = f"t{rng.randint(0, 30)}"
    return out


def request(rng: random.Random) -> dict[str, Any]:
    terms = [
        VOCABULARY[min(int(rng.paretovariate(0.4)) - 1, 399)] for _ in range(rng.randint(1, 9))
    ]
    if rng.random() < 0.2:
        terms.append(rng.choice(terms))  # a word twice
    if rng.random() < 0.15:
        terms.append("w1*")  # a prefix: w1, w10..w19, w100..
    wanted: dict[str, Any] = {"limit": rng.choice([1, 3, 10, 40, 200])}
    if rng.random() < 0.4:
        wanted["types"] = rng.sample(TYPES, rng.randint(1, 2))
    if rng.random() < 0.5:
        wanted["scope"] = {"project": f"p{rng.randint(0, 7)}"}
    if rng.random() < 0.6:
        wanted["applies_to"] = {"level": "task", "project": f"p{rng.randint(0, 3)}"} | (
            {"task_id": f"t{rng.randint(0, 30)}"} if rng.random() < 0.5 else {}
        )
    return {"terms": query_terms(" ".join(terms)), **wanted}


async def test_every_way_gives_what_every_posting_gives(
    db: Db, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(21)
    rows = [row("a", i, text(rng)) | {"scope": scope(rng)} for i in range(3000)]
    rows += [row("b", 5000 + i, text(rng)) for i in range(400)]
    await db.insert(rows)
    for i in rng.sample(range(3000), 200):  # dead slots, under the rebuild's share
        await db.delete("a", f"a-{i:05d}")
    index = await built(db.path)
    try:
        requests = [request(rng) for _ in range(150)]
        answers: dict[str, list[dict[str, float]]] = {}
        for way, settings in WAYS.items():
            with monkeypatch.context() as m:
                for name, value in settings.items():
                    m.setattr(bm25, name, value)
                got = []
                for r in requests:
                    found = await index.top(
                        "a",
                        r["terms"],
                        r["limit"],
                        types=r.get("types"),
                        scope=r.get("scope"),
                        applies_to=r.get("applies_to"),
                    )
                    assert found is not None
                    got.append(found)
                answers[way] = got
        expected = answers.pop("every posting")
        assert sum(len(a) for a in expected) > 1000  # the requests find things
        assert sum(1 for a in expected if not a) < 50  # some filters leave nothing
        for way, got in answers.items():
            for r, g, e in zip(requests, got, expected, strict=True):
                assert list(g.items()) == list(e.items()), (way, r)
    finally:
        index.close()
