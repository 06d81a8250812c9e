"""The local embedder's speed: embeddings/s for one-sentence and 200-word texts in batches,
and the latency of embedding one query (as recall does).

    python -m bench.embed [--threads 1] [--batch 32] [--texts 512] [--queries 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from app.core.config import Embeddings
from app.embeddings.local import LocalEmbedder
from bench.corpus import sentences


def long_texts(pool: list[str], count: int, *, words: int = 200) -> list[str]:
    """`count` texts of `words` words, cut from consecutive sentences of `pool`."""
    stream = " ".join(pool).split()
    step = max(1, (len(stream) - words) // max(count, 1))
    return [" ".join(stream[i * step : i * step + words]) for i in range(count)]


async def rate(embedder: LocalEmbedder, texts: list[str]) -> float:
    """Texts embedded per second, the whole list through embed() once."""
    await embedder.embed(texts[: embedder.batch_size])  # warm-up
    started = time.perf_counter()
    await embedder.embed(texts)
    return len(texts) / (time.perf_counter() - started)


async def latencies(embedder: LocalEmbedder, queries: list[str]) -> list[float]:
    """Milliseconds to embed each query alone."""
    out = []
    for query in queries:
        started = time.perf_counter()
        await embedder.embed([query])
        out.append((time.perf_counter() - started) * 1000)
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--texts", type=int, default=512, help="texts per throughput run")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args()

    pool = sentences(args.texts * 40)
    short = pool[: args.texts]
    long = long_texts(pool, args.texts)
    settings = Embeddings(
        provider="local", threads=args.threads, batch_size=args.batch, max_tokens=args.max_tokens
    )
    started = time.perf_counter()
    embedder = LocalEmbedder(settings)
    await embedder.start()
    load_ms = (time.perf_counter() - started) * 1000
    try:
        short_rate = await rate(embedder, short)
        long_rate = await rate(embedder, long)
        times = sorted(await latencies(embedder, pool[-args.queries :]))
    finally:
        await embedder.close()

    tokens = [embedder._tokenizer.encode(text) for text in long[:64]]
    print(
        f"model {embedder.model} dim {embedder.dim}, threads {args.threads}, "
        f"batch {args.batch}, max_tokens {args.max_tokens}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(f"load + warm-up            {load_ms:8.0f} ms")
    print(
        f"short texts (1 sentence)  {short_rate:8.0f} embeddings/s  ({len(short)} texts, "
        f"mean {statistics.mean(len(t.split()) for t in short):.0f} words)"
    )
    print(
        f"long texts (200 words)    {long_rate:8.0f} embeddings/s  ({len(long)} texts, "
        f"mean {statistics.mean(len(e.ids) for e in tokens):.0f} tokens after truncation)"
    )
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    print(
        f"one query                 p50 {statistics.median(times):.2f} ms  p95 {p95:.2f} ms  "
        f"({len(times)} queries)"
    )


if __name__ == "__main__":
    asyncio.run(main())
