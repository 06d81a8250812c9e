"""`python -m bench.policy --world kinds`: the learned policy with the service's default
settings in the world of bench/kindworld.py (only the task kind x memory type interaction
tells helpful memories from harmful ones), and in the same world made inert (rewards are
fair coins). Per seed, a user's routine (tests/system/kind_drive.py): train after 1,000
rewarded recalls, ask to activate (a canary at the default share), train again every 300
while refused; the canary's own test promotes or rolls it back; 2,100 rewarded recalls in
all. Each seed runs a real server (SQLite + LevelDB, its own worker) at the default
exploration unless --epsilon says otherwise."""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.server import EngramServer
from tests.system.kind_drive import OnKinds, on_kinds
from tests.system.simulate import settle

# bench.policy's seeded_server: (data dir, seed, epsilon or None, tree) -> a started server.
Server = Callable[[Path, int, float | None, Path | None], EngramServer]


async def one(seed: int, args: argparse.Namespace, server_of: Server, *, inert: bool) -> OnKinds:
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        server = server_of(Path(tmp), seed, args.epsilon, args.tree)
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
                return await on_kinds(
                    client,
                    seed=seed,
                    wait=lambda: settle(client, timeout=600),
                    inert=inert,
                    budget=args.budget,
                    concurrency=args.concurrency,
                )
        finally:
            server.stop()


def _f(x: float) -> str:
    return "—" if math.isnan(x) else f"{x:.3f}"


def table(runs: list[tuple[OnKinds, OnKinds]], budget: int) -> str:
    rows = [
        "| seed | verdicts | canary from | ended | promoted after | baseline true | learned true | inert world: verdicts, ended |",
        "|---:|---|---:|---|---:|---:|---:|---|",
    ]
    for r, n in runs:
        rows.append(
            f"| {r.seed} | {', '.join(r.verdicts)} | {r.activated_at or '—'} | {r.status} | "
            f"{r.promoted_after or '—'} | {_f(r.baseline_true)} | {_f(r.learned_true)} | "
            f"{', '.join(n.verdicts)}; {n.status} |"
        )
    active = sum(r.status == "active" for r, _ in runs)
    kept = sum(n.status in ("active", "canary") for _, n in runs)
    rows += [
        "",
        f"- kind x type world: the learned policy ended active within {budget} rewarded "
        f"recalls in {active}/{len(runs)} seeds",
        f"- inert world: it ended active or a canary in {kept}/{len(runs)} seeds",
    ]
    return "\n".join(rows)


async def kinds(args: argparse.Namespace, server_of: Server) -> None:
    runs = []
    started = time.perf_counter()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        t = time.perf_counter()
        real = await one(seed, args, server_of, inert=False)
        inert = await one(seed, args, server_of, inert=True)
        runs.append((real, inert))
        print(
            f"seed {seed}: {real} / inert {inert} ({time.perf_counter() - t:.0f} s)",
            file=sys.stderr,
        )
    print(f"`{' '.join(['python -m bench.policy', *sys.argv[1:]])}`")
    print(f"({time.perf_counter() - started:.0f} s)\n")
    print(table(runs, args.budget))
