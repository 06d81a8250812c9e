"""The in-memory BM25 index's ways to a query's answer, side by side on one store
(`app/search/bm25.py`): every posting scored, the terms pruned (MaxScore), and the way the
index chooses. The store is `bench.recall --shape natural`'s (LongMemEval turns padded with
natural text); the queries are its questions, scoped as a recall scopes them, the best
200 asked as recall's prefilter does. Per eighth of the queries by the postings their
terms hold: each way's median milliseconds and its ratio to every posting, in one run.

    python -m bench.search_paths [--sizes 100000,1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from app.core.config import Limits
from app.db import probe
from app.learning.ranking import query_terms
from app.search import bm25
from app.search.bm25 import term_groups, top_matches
from app.search.loading import FETCH, build, connect
from app.search.postings import Data, ns_token
from app.search.scoring import Filter
from bench.longmemeval import data_file, pool, read
from bench.recall_natural import SCOPE, fill, natural_texts, padding_sentences

WAYS: dict[str, dict[str, int]] = {
    "every posting": {"PRUNE_SHARE": 10**9, "SCOPE_SHARE": 10**9},
    "pruned": {"PRUNE_SHARE": 0, "PRUNE_MIN_SLOTS": 0, "SCOPE_SHARE": 10**9},
    "chosen": {},
}
LIMIT = 200
PROBE = probe.LocalProbe()
REPEAT = 3


def stem(terms: list[str]) -> list[str]:
    """The index's stems (the same tokenizer in a private in-memory SQLite)."""
    missing = probe.unknown(terms)
    if missing:
        PROBE.learn(missing)
    return probe.stems(terms)


def timed(data: Data, questions: list[str], stem: Callable[[list[str]], list[str]]) -> None:
    token = ns_token("default")
    rows = []
    for i, question in enumerate(questions):
        terms = query_terms(question)
        scope = {"level": "task", "task_id": f"q{i}", "project": SCOPE["project"]}
        wanted = Filter(None, None, scope)
        postings = sum(
            len(data.postings[t].slots)
            for group in term_groups(data, terms, stem)
            for t, _ in group
            if t in data.postings
        )
        ms = []
        for settings in WAYS.values():
            saved = {name: getattr(bm25, name) for name in settings}
            for name, value in settings.items():
                setattr(bm25, name, value)
            try:
                top_matches(data, token, terms, LIMIT, wanted, True, stem)  # warm
                t0 = time.perf_counter()
                for _ in range(REPEAT):
                    top_matches(data, token, terms, LIMIT, wanted, True, stem)
                ms.append((time.perf_counter() - t0) / REPEAT * 1000)
            finally:
                for name, value in saved.items():
                    setattr(bm25, name, value)
        rows.append((postings, ms))
    rows.sort(key=lambda r: r[0])
    step = max(1, len(rows) // 8)
    for lo in range(0, len(rows), step):
        chunk = rows[lo : lo + step]
        med = [statistics.median(r[1][w] for r in chunk) for w in range(len(WAYS))]
        print(
            f"  postings {chunk[0][0]:>9,}-{chunk[-1][0]:>9,}: "
            + ", ".join(f"{name} {m:6.2f} ms" for name, m in zip(WAYS, med, strict=True))
            + f" | pruned / every {med[1] / med[0]:.2f}, chosen / every {med[2] / med[0]:.2f}"
        )
    every = [statistics.median(r[1][w] for r in rows) for w in range(len(WAYS))]
    print(
        "  all queries, median: "
        + ", ".join(f"{n} {m:.2f} ms" for n, m in zip(WAYS, every, strict=True))
        + f" | chosen / every {every[2] / every[0]:.2f}"
    )


async def main(sizes: list[int]) -> None:
    lme = pool(read(data_file(None)), max_chars=Limits().max_text_chars)
    questions = [q.text for q in lme.questions]
    texts = natural_texts(lme, *padding_sentences(lme))
    with tempfile.TemporaryDirectory(prefix="engram-paths-") as name:
        db, loaded = Path(name) / "engram.db", 0
        for size in sorted(sizes):
            await fill(f"sqlite+aiosqlite:///{db}", texts, start=loaded, end=size)
            loaded = size
            t0 = time.perf_counter()
            data = build(connect(str(db)), lambda cur: cur.fetchmany(FETCH))
            print(
                f"{size:,} memories ({data.live_tokens:,.0f} tokens, built in "
                f"{time.perf_counter() - t0:.0f} s); {len(questions)} questions, best {LIMIT}:"
            )
            timed(data, questions, stem)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100000,1000000")
    args = parser.parse_args()
    asyncio.run(main([int(s) for s in args.sizes.split(",")]))
