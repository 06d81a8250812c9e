"""A learned recall policy against baseline_v0 in the simulated world of
bench/policyworld.py, over several seeds, each against the real server (SQLite + LevelDB,
its own worker).

Per seed: baseline_v0 explores (--epsilon) for --logged rewarded recalls; a policy is
trained on them and evaluated off-policy by cross-fitting; it is activated as a canary for
--share of the recalls (1 by default) and --online more follow; the table says where it
ended (a canary is promoted once surely better) and after how many rewarded recalls. Then
a shifted workload (the low-confidence notes are the right ones) is logged by baseline_v0
for --shifted recalls, and a policy trained the same way is evaluated on it. A second server that never explores
logs --off recalls, and the policy trained on them is evaluated too.

Printed as markdown: per seed, then the true mean reward per recall of both policies (mean
and 95% interval over seeds) beside the evaluator's estimates (mean over seeds of the
point and of the interval's ends), how often the estimate's interval holds the learned
policy's true online value, and what the evaluator said of the shift and of the logs
without exploration.

    python -m bench.policy [--seeds 10] [--epsilon 0.4] [--logged 2000] [--online 400]
        [--shifted 1000] [--off 400] [--concurrency 4] [--share 1] [--tree DIR]

--tree runs the server of another checkout (say `git archive HEAD` unpacked), to compare
two versions on the same seeds.

    python -m bench.policy --world noise [--seeds 10] [--epsilon 0.1] [--share S]

runs the inert world instead (rewards are pure noise: no policy is better): per seed, a
policy trained on --logged recalls is activated as a canary as a user would (for the
service's default share unless --share; 409 unless its verdict is better or it may go on
trial), --online recalls follow, and the table says where it ended; then the same with
the activation forced, which puts the canary's own sequential test to work.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.server import EngramServer
from tests.system.policy_drive import OnNoise, Proof, estimate, on_noise, prove, without_exploration
from tests.system.simulate import settle

# Student's t, 97.5th percentile, by degrees of freedom (the normal's beyond 30).
T975 = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14]
T975 += [2.13, 2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05]
T975 += [2.05, 2.04]


def interval(values: Sequence[float]) -> str:
    """mean [low, high]: the 95% interval of the mean over seeds (those that have one: a
    policy refused never decided, its value is nan)."""
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return "none"
    mean = statistics.fmean(values)
    if len(values) < 2:
        return f"{mean:.3f}"
    t = T975[len(values) - 2] if len(values) - 1 <= len(T975) else 1.96
    half = t * statistics.stdev(values) / math.sqrt(len(values))
    return f"{mean:.3f} [{mean - half:.3f}, {mean + half:.3f}]"


def averaged(evaluations: Sequence[dict], who: str, how: str) -> str:  # type: ignore[type-arg]
    """The estimate's point and interval ends, each averaged over seeds."""
    parts = [estimate(e, who, how) for e in evaluations if e.get("estimates")]
    if not parts:
        return "none"
    mean = {k: statistics.fmean(p[k] for p in parts) for k in ("value", "low", "high")}
    return f"{mean['value']:.3f} [{mean['low']:.3f}, {mean['high']:.3f}]"


def certifiable(evaluations: Sequence[dict]) -> str:  # type: ignore[type-arg]
    found = [e["smallest_improvement"] for e in evaluations if "smallest_improvement" in e]
    return f"{statistics.fmean(found):.3f}" if found else "not reported"


def share(flags: Sequence[bool]) -> str:
    return f"{sum(flags)}/{len(flags)}"


def table(
    proofs: list[Proof], refusals: list[tuple[dict[str, Any], int]], *, epsilon: float
) -> str:
    evals = [p.evaluation for p in proofs]
    rows = [
        "| seed | baseline true | learned true | learned DR [95%] | verdict | shifted: DR policy / baseline | shifted verdict, activate |",
        "|---:|---:|---:|---:|---|---:|---|",
    ]
    for p in proofs:
        dr = estimate(p.evaluation, "policy") if p.evaluation.get("estimates") else None
        shifted = p.shifted.get("estimates") and (
            f"{estimate(p.shifted, 'policy')['value']:.3f} / "
            f"{estimate(p.shifted, 'baseline')['value']:.3f}"
        )
        rows.append(
            f"| {p.seed} | {p.baseline_true:.3f} | {p.learned_true:.3f} "
            f"({p.learned_recalls}) | "
            + (f"{dr['value']:.3f} [{dr['low']:.3f}, {dr['high']:.3f}]" if dr else "none")
            + f" | {p.evaluation['verdict']} | {shifted or 'none'} | "
            f"{p.shifted['verdict']}, {p.shifted_activated} |"
        )
    rows += [
        "",
        "| policy | true mean reward per recall (95% CI over seeds) | DR estimate | IPS estimate | SNIPS estimate |",
        "|---|---:|---:|---:|---:|",
    ]
    for who, name, true in (
        ("baseline", f"baseline_v0 (epsilon {epsilon:g})", [p.baseline_true for p in proofs]),
        ("policy", "learned (linear bandit)", [p.learned_true for p in proofs]),
    ):
        rows.append(
            f"| {name} | {interval(true)} | "
            + " | ".join(averaged(evals, who, how) for how in ("dr", "ips", "snips"))
            + " |"
        )
    gain = [p.learned_true - p.baseline_true for p in proofs]
    rows += [
        "",
        f"- learned minus baseline, true reward per recall: {interval(gain)}",
        "- the estimate's 95% interval holds the learned policy's true online value: "
        + ", ".join(
            f"{how.upper()} {share([p.covered('policy', how) for p in proofs])}"
            for how in ("dr", "ips", "snips")
        )
        + " (baseline_v0's DR interval holds its true mean on the logged recalls: "
        + f"{share([p.covered('baseline') for p in proofs])})",
        "- the improvement's interval (the verdict's estimator) holds learned minus baseline: "
        + share([p.improvement_covered() for p in proofs])
        + "; smallest improvement the logs could certify, mean over seeds: "
        + certifiable(evals),
        "- verdict (cross-fitted on the logs): "
        + share([p.evaluation["verdict"] == "better" for p in proofs])
        + " better; activation "
        + share([p.activated == 200 for p in proofs])
        + " accepted",
        "- shifted workload: the policy's DR estimate below the baseline's in "
        + share(
            [
                bool(p.shifted.get("estimates"))
                and estimate(p.shifted, "policy")["value"]
                < estimate(p.shifted, "baseline")["value"]
                for p in proofs
            ]
        )
        + f"; true value there: baseline {interval([p.shifted_baseline_true for p in proofs])}, "
        + f"the learned choice {interval([p.shifted_learned_true for p in proofs])}; "
        + "activation refused (409) in "
        + share([p.shifted_activated == 409 for p in proofs]),
        "- the learned policy after its online recalls: "
        + ", ".join(
            f"{status} {share([p.status == status for p in proofs])}"
            for status in sorted({p.status for p in proofs})
        )
        + "; promoted after (rewarded recalls, logged and online): "
        + (", ".join(str(p.promoted_after) for p in proofs if p.promoted_after) or "none"),
        "- exploration off: verdict refused in "
        + share([e["verdict"] == "refused" for e, _ in refusals])
        + ", activation refused (409) in "
        + share([status == 409 for _, status in refusals]),
    ]
    return "\n".join(rows)


def seeded_server(path: Path, seed: int, epsilon: float | None, tree: Path | None) -> EngramServer:
    """A seeded server of the tree (this checkout's by default) exploring at epsilon (None:
    the service's default)."""
    env = {"ENGRAM_LOG_REQUESTS": "false", "ENGRAM_RECALL__SEED": str(seed)}
    if epsilon is not None:
        env["ENGRAM_RECALL__EPSILON"] = str(epsilon)
    return EngramServer(path, tree=tree, **env).start()


async def one_seed(seed: int, args: argparse.Namespace) -> tuple[Proof, tuple[dict[str, Any], int]]:
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        server = seeded_server(Path(tmp) / "on", seed, args.epsilon, args.tree)
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
                proof = await prove(
                    client,
                    seed=seed,
                    logged=args.logged,
                    online=args.online,
                    shifted=args.shifted,
                    wait=lambda: settle(client, timeout=600),
                    concurrency=args.concurrency,
                    share=args.share,
                )
        finally:
            server.stop()
        server = seeded_server(Path(tmp) / "off", seed, 0.0, args.tree)
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
                refusal = await without_exploration(
                    client, seed=seed, logged=args.off, wait=lambda: settle(client, timeout=600)
                )
        finally:
            server.stop()
    return proof, refusal


async def noise_seed(seed: int, args: argparse.Namespace, *, force: bool) -> OnNoise:
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        server = seeded_server(Path(tmp), seed, args.epsilon, args.tree)
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
                return await on_noise(
                    client,
                    seed=seed,
                    logged=args.logged,
                    online=args.online,
                    wait=lambda: settle(client, timeout=600),
                    share=args.share,
                    force=force,
                    concurrency=args.concurrency,
                )
        finally:
            server.stop()


def noise_table(runs: list[tuple[OnNoise, OnNoise]]) -> str:
    rows = [
        "| seed | verdict | activation | status after | forced run: verdict, canary's recalls, status after |",
        "|---:|---|---:|---|---|",
    ]
    for plain, forced in runs:
        rows.append(
            f"| {plain.seed} | {plain.verdict} | {plain.activated} | {plain.status} | "
            f"{forced.verdict}, {forced.recalls}, {forced.status} |"
        )
    kept = [p.status in ("active", "canary") for p, _ in runs]
    better = [r.verdict == "better" for pair in runs for r in pair]
    promoted = [f.status == "active" for _, f in runs]
    rows += [
        "",
        f"- as a user would: the learned policy ended active or a canary in {share(kept)} seeds",
        f"- verdict `better` on noise: {share(better)} trainings",
        f"- forced canaries promoted on noise: {share(promoted)}",
    ]
    return "\n".join(rows)


async def noise(args: argparse.Namespace) -> None:
    runs = []
    started = time.perf_counter()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        plain = await noise_seed(seed, args, force=False)
        forced = await noise_seed(seed, args, force=True)
        runs.append((plain, forced))
        print(f"seed {seed}: {plain} / forced {forced}", file=sys.stderr)
    print(f"`{' '.join(['python -m bench.policy', *sys.argv[1:]])}`")
    print(f"({time.perf_counter() - started:.0f} s)\n")
    print(noise_table(runs))


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--epsilon", type=float, default=0.4)
    parser.add_argument("--logged", type=int, default=2000)
    parser.add_argument("--online", type=int, default=400)
    parser.add_argument("--shifted", type=int, default=1000)
    parser.add_argument("--off", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--tree", type=Path, default=None, help="run this checkout's server")
    parser.add_argument("--world", choices=("notes", "noise", "kinds"), default="notes")
    parser.add_argument("--budget", type=int, default=2100, help="kinds: rewarded recalls")
    parser.add_argument("--share", type=float, default=None, help="canary share")
    args = parser.parse_args()
    if args.world == "kinds":
        from bench.policy_kinds import kinds

        args.epsilon = None if "--epsilon" not in sys.argv else args.epsilon
        await kinds(args, seeded_server)
        return
    if args.world == "noise":
        await noise(args)
        return
    args.share = 1.0 if args.share is None else args.share
    proofs, refusals = [], []
    started = time.perf_counter()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        t = time.perf_counter()
        proof, refusal = await one_seed(seed, args)
        proofs.append(proof)
        refusals.append(refusal)
        print(
            f"seed {seed}: baseline {proof.baseline_true:.3f}, learned "
            f"{proof.learned_true:.3f} ({proof.evaluation['verdict']}), shifted "
            f"{proof.shifted['verdict']}, no exploration {refusal[0]['verdict']}; ended "
            f"{proof.status}, promoted after {proof.promoted_after} "
            f"({time.perf_counter() - t:.0f} s)",
            file=sys.stderr,
        )
    print(f"`{' '.join(['python -m bench.policy', *sys.argv[1:]])}`")
    print(f"({time.perf_counter() - started:.0f} s)\n")
    print(table(proofs, refusals, epsilon=args.epsilon))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    asyncio.run(main())
