"""`bench.recall --shape natural`: recall latency on the requests agents send. The store
holds conversation turns (the LongMemEval oracle set's, bench/longmemeval.py) padded with
more natural text up to each size; the requests are people's questions (the same set's) as
`task`, scoped, k 10, budget 2,000, one client, on the real server. In the same run the
obvious approach is timed over the same memories: a plain FTS5 BM25 OR-query of the
question's words, stop words dropped, in process (no HTTP). Printed: p50 / p95 of each,
their ratios, recall's p50 against its own at the smallest size, the indexes' readiness
after a first start (built from SQL) and after a restart (read back from their files), and
the server's RSS."""

from __future__ import annotations

import asyncio
import re
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from app.core.config import Limits, Settings
from app.db.backends import create_engine
from app.db.engine import create_sessionmaker
from app.db.migrate import migrate
from app.learning.ranking import STOP_WORDS
from app.repositories.memories import MEMORIES
from app.search import snapshot
from bench.corpus import sentences
from bench.longmemeval import Pool, data_file, pool, read
from bench.recall import pct, row
from bench.recall_vectors import copy_vectors, embed_turns
from tests.server import EngramServer

SCOPE = {"level": "global", "project": "atlas"}
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")
WARMUP = 20


def padding_sentences(data: Pool) -> tuple[list[str], list[str]]:
    """Docstring prose (bench/corpus.py) and the sentences of the turns themselves."""
    prose = sentences(1_000_000)
    seen: dict[str, None] = {}
    for turn in data.turns:
        for sent in _SENTENCE.split(" ".join(turn.content.split())):
            if len(sent.split()) >= 5:
                seen.setdefault(sent, None)
    return prose, list(seen)


def natural_texts(data: Pool, prose: list[str], chat: list[str]) -> Iterator[tuple[str, str]]:
    """(text, source): every turn, then windows of 1, 2, 3... neighbouring sentences of the
    prose and of the turns, as long as asked."""
    for turn in data.turns:
        yield turn.content, "turn"
    width = 1
    while True:
        for source, base in (("prose", prose), ("chat", chat)):
            for i in range(0, len(base) - width + 1):
                yield " ".join(base[i : i + width]), source
        width += 1


async def fill(
    url: str, texts: Iterator[tuple[str, str]], *, start: int, end: int
) -> dict[str, int]:
    """Rows start..end inserted straight into the memories table (its full-text triggers
    run), scoped to the project the requests name; how many came from each source."""
    engine = create_engine(Settings(database_url=url))
    await migrate(engine)
    now = datetime.now(UTC)
    sources: dict[str, int] = {}
    async with create_sessionmaker(engine, write=True)() as session:
        for lo in range(start, end, 5000):
            rows = []
            for i in range(lo, min(end, lo + 5000)):
                text, source = next(texts)
                sources[source] = sources.get(source, 0) + 1
                rows.append({**row(i, text, now), "type": "fact", "scope": SCOPE})
            await session.execute(MEMORIES.insert(), rows)
            await session.commit()
    await engine.dispose()
    return sources


def fts_query(question: str) -> str:
    """The question's words, stop words dropped, OR-ed: the query a new user writes."""
    words = dict.fromkeys(w for w in _WORD.findall(question.lower()) if w not in STOP_WORDS)
    return " OR ".join(f'"{w}"' for w in words)


BASELINE = (
    "SELECT memory_id FROM memories_fts WHERE memories_fts MATCH ? "
    "ORDER BY bm25(memories_fts) LIMIT 10"
)


async def timed(
    url: str, db: Path, questions: list[str], *, mode: str
) -> tuple[list[float], list[float]]:
    """Per question, the plain FTS5 query in process then POST /v1/recall (the question as
    `task`, scoped to the project and its own task), interleaved so that both see the same
    load from whatever else runs on the machine; milliseconds of each."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    recall, baseline = [], []
    try:
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            for i, q in enumerate(questions[:WARMUP] + questions):
                t0 = time.perf_counter()
                conn.execute(BASELINE, (fts_query(q),)).fetchall()
                t1 = time.perf_counter()
                scope = {"level": "task", "task_id": f"q{i}", "project": SCOPE["project"]}
                body = {"task": q, "scope": scope, "k": 10, "token_budget": 2000}
                r = await client.post("/v1/recall", json=body)
                t2 = time.perf_counter()
                if r.status_code != 200:
                    raise RuntimeError(f"recall: {r.status_code} {r.text}")
                if (got := r.json()["retrieval"]["mode"]) != mode:
                    raise RuntimeError(f"recall searched {got}, not {mode}")
                if i >= WARMUP:
                    baseline.append((t1 - t0) * 1000)
                    recall.append((t2 - t1) * 1000)
    finally:
        conn.close()
    return recall, baseline


async def index_build(url: str) -> tuple[float, dict[str, Any]]:
    """Seconds from the server answering until its search indexes (BM25, and vectors when
    it embeds) are ready, and GET /ready's search stats."""
    t0 = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        while True:
            body: dict[str, Any] = (await client.get("/ready")).json()
            lexical = body.get("search_index") or {}
            vectors = (body.get("search") or {}).get("embeddings", {}).get("index") or {}
            # The approximate vector index of a big namespace is built after loading.
            if all(
                s.get("state", "ready") == "ready" for s in (lexical, vectors)
            ) and not vectors.get("building"):
                return time.perf_counter() - t0, {"bm25": lexical, "vectors": vectors}
            await asyncio.sleep(0.05)


@dataclass
class Size:
    recall: list[float]
    baseline: list[float]
    first_ready_s: float  # indexes built from SQL
    restart_ready_s: float  # read back from their files


async def measure_size(tmp: Path, db: Path, questions: list[str], *, mode: str) -> Size:
    """A server started on the store (`hybrid`: with the local embedder), then started
    again (its indexes read back from the files the first saved), timed."""
    ready_s: list[float] = []
    for start in ("first start", "restart"):
        if start == "first start":  # built from SQL: not caught up from the last size's file
            snapshot.path_for(str(db)).unlink(missing_ok=True)
        server = EngramServer(
            tmp,
            database_url=f"sqlite+aiosqlite:///{db}",
            ENGRAM_LOG_REQUESTS="false",
            ENGRAM_EMBEDDINGS__PROVIDER="local" if mode == "hybrid" else "none",
        ).start()
        try:
            build_s, stats = await index_build(server.url)
            ready_s.append(build_s)
            rss_built = server.rss_bytes()
            if start == "restart":
                recall, baseline = await timed(server.url, db, questions, mode=mode)
                rss_after = server.rss_bytes()
        finally:
            server.stop()
        print(
            f"  {mode} server, {start}: indexes ready {build_s:.1f} s after it answered "
            f"({', '.join(f'{k}: {v}' for k, v in stats.items() if v)}); "
            f"RSS {rss_built / 2**20:,.0f} MiB then"
            + (f", {rss_after / 2**20:,.0f} MiB after the recalls" if start == "restart" else "")
        )
    return Size(recall, baseline, ready_s[0], ready_s[1])


def ratios(size: int, s: Size, first: Size, previous: Size) -> str:
    r50, r95 = statistics.median(s.recall), pct(s.recall, 95)
    b50, b95 = statistics.median(s.baseline), pct(s.baseline, 95)
    return (
        f"{size:>9,} | recall p50 {r50:6.1f} p95 {r95:6.1f} ms | FTS5 OR-query p50 {b50:6.1f} "
        f"p95 {b95:6.1f} ms | recall / query: p50 {r50 / b50:.2f}, p95 {r95 / b95:.2f} | "
        f"recall p50 / its p50 at the smallest size {r50 / statistics.median(first.recall):.2f}, "
        f"at the size before {r50 / statistics.median(previous.recall):.2f} | indexes ready "
        f"{s.first_ready_s:.1f} s after a first start, {s.restart_ready_s:.1f} s after a restart"
    )


async def main(sizes: list[int], *, data: str | None, hybrid: bool) -> None:
    t0 = time.perf_counter()
    records = read(data_file(data))
    lme = pool(records, max_chars=Limits().max_text_chars)
    questions = [q.text for q in lme.questions]
    prose, chat = padding_sentences(lme)
    print(
        f"store: {len(lme.turns):,} LongMemEval turns, then windows of 1, 2, 3... neighbouring "
        f"sentences of docstring prose ({len(prose):,} sentences, bench/corpus.py) and of the "
        f"turns ({len(chat):,} sentences), up to each size; every memory a fact scoped to "
        f"{SCOPE} ({time.perf_counter() - t0:.0f} s to prepare)"
    )
    print(
        f"requests: {len(questions)} LongMemEval questions as `task`, scope "
        "{level: task, task_id, project}, k 10, token_budget 2000, one client "
        f"({WARMUP} more first as warm-up); baseline: FTS5 bm25 OR-query of the question's "
        "words without stop words, top 10, python sqlite3 in process"
    )
    modes = ["lexical", "hybrid"] if hybrid else ["lexical"]
    vectors = await embed_turns(lme) if hybrid else None
    if vectors is not None:
        n = len(vectors.rows)
        print(
            f"vectors: the first {n:,} turns written in {vectors.write_s:.1f} s and embedded "
            f"in the background by the server: backlog empty {vectors.drain_s:.1f} s after "
            f"the last write ({vectors.embedded / (vectors.write_s + vectors.drain_s):,.1f} "
            f"memories/s from the first write, {vectors.model_rate} memories/s of the "
            "backlog's own working time); every other memory gets a copy of one of their vectors"
        )
    texts = natural_texts(lme, prose, chat)
    results: dict[str, dict[int, Size]] = {m: {} for m in modes}
    sources: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="engram-natural-") as name:
        tmp, loaded = Path(name), 0
        db = tmp / "engram.db"
        for size in sorted(sizes):
            t1 = time.perf_counter()
            for key, n in (
                await fill(f"sqlite+aiosqlite:///{db}", texts, start=loaded, end=size)
            ).items():
                sources[key] = sources.get(key, 0) + n
            if vectors is not None:
                copy_vectors(db, vectors, start=loaded, end=size)
            print(
                f"{size:>9,} memories: {size - loaded:,} rows inserted in "
                f"{time.perf_counter() - t1:.0f} s (so far: {sources})"
            )
            loaded = size
            for mode in modes:
                results[mode][size] = await measure_size(tmp, db, questions, mode=mode)
    for mode, by_size in results.items():
        first = previous = by_size[min(by_size)]
        print(f"\nrecall ({mode}) against the plain FTS5 query, same memories, same run:")
        for size, s in by_size.items():
            print(ratios(size, s, first, previous))
            previous = s
    print(
        "targets at 100,000: recall / query p50 <= 0.4 and p95 <= 0.5 (hybrid: p50 <= 0.6); "
        "at 1,000,000: p50 <= 1.5x its 100,000 figure, indexes ready <= 30 s after a restart, "
        "RSS <= 1.5 GiB"
    )
