"""How near a held-out ask comes to its own kind, by meaning: a kind's mean vector against
its nearest examples (app/learning/kinds.py's `meaning_cover`), with the local model.

For each seed and each project of the agent world (bench/agentsessions.py), every kind
is given `--prompts` training asks; then `--probes` held-out asks per kind are scored
against every kind of their project. Printed per measure: the asks within reach of their
own kind (cover ≥ the default threshold, 0.3), those within reach of another kind, and
those whose own kind scores best.

    python -m bench.kind_meaning [--seeds 5] [--prompts 20] [--probes 3]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys

import numpy as np

from app.core.config import Embeddings
from app.embeddings.base import EmbeddingUnavailable
from app.embeddings.local import LocalEmbedder
from app.learning.kinds import Kind, add_prompt, meaning_cover
from bench.agentsessions import PROJECTS, new_task

THRESHOLD = 0.3


async def run(seeds: int, prompts: int, probes: int) -> dict[str, dict[str, int]]:
    embedder = LocalEmbedder(Embeddings(provider="local"))
    counts = {m: {"asks": 0, "own": 0, "other": 0, "best": 0} for m in ("mean", "nearest")}
    for seed in range(seeds):
        rng = random.Random(seed)
        for project in PROJECTS:
            kinds = {}
            for k in project.kinds:
                asks = [new_task(project, k, rng).prompt for _ in range(prompts)]
                kind = Kind(k.name, k.name)
                for vector in np.asarray(await embedder.embed(asks), dtype=np.float32):
                    add_prompt(kind, [], vector)
                kinds[k.name] = kind
            # The kinds as each measure sees them: the mean alone, the mean and the examples.
            seen = {
                "mean": {
                    n: Kind(k.id, k.name, k.prompts, k.terms, k.meaning) for n, k in kinds.items()
                },
                "nearest": kinds,
            }
            held = [(k.name, new_task(project, k, rng, held_out=True).prompt)
                    for k in project.kinds for _ in range(probes)]  # fmt: skip
            vectors = np.asarray(await embedder.embed([a for _, a in held]), dtype=np.float32)
            for (own, _), vector in zip(held, vectors, strict=True):
                for measure, c in counts.items():
                    score = {n: meaning_cover(vector, k) for n, k in seen[measure].items()}
                    other = max(v for n, v in score.items() if n != own)
                    c["asks"] += 1
                    c["own"] += score[own] >= THRESHOLD
                    c["other"] += other >= THRESHOLD
                    c["best"] += score[own] > other
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--prompts", type=int, default=20, help="training asks per kind")
    parser.add_argument("--probes", type=int, default=3, help="held-out asks per kind")
    args = parser.parse_args()
    try:
        counts = asyncio.run(run(args.seeds, args.prompts, args.probes))
    except EmbeddingUnavailable as exc:
        sys.exit(f"the local embedder is needed: {exc}")
    print("measure   asks  own kind in reach  another in reach  own kind best")
    for measure, c in counts.items():
        print(f"{measure:8s} {c['asks']:5d}  {c['own']:17d}  {c['other']:16d}  {c['best']:13d}")


if __name__ == "__main__":
    main()
