"""Learning-loop benchmarks, each against the real server (uvicorn, SQLite + LevelDB).

curve   the simulated agent with memory against the one without (bench/simworld.py),
        success rate per block of episodes, printed and drawn
context the world whose procedures depend on the context (bench/simcontext.py): skills
        learned from a batch of messy logged episodes, per (type, context) and in a
        context never seen, and the curves of a messy agent that follows recalled skills
        after that batch and from nothing, printed and drawn
scale   reflection, mining and skill evolution over 100,000 stored episodes: the time
        `engram worker --once` takes to learn them all, and the cost of one new episode
        over the first 5,000 and over 5,000 more after 100,000 (it should not grow)
ingest  POST /v1/episodes with the API's worker running against the same server
        without it (ENGRAM_LEARNING__WORKER=false), same load, same run

    python -m bench.learning [curve|context|scale|ingest|all ...] [--episodes 100000]
        [--batch 400] [--context-episodes 600] [--figure bench/out/learning.png]

The curves drawn go to --figure, one panel each (bench/learning_curve.png is one run of
`curve context`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.ingest import line
from bench.learning_context import context
from bench.learning_plot import Panel, draw
from bench.loadgen import run
from bench.simworld import RandomAgent, World, chance_rate, precision_recall
from tests.server import EngramServer
from tests.system.raw_http import build_request
from tests.system.simulate import learned_steps, simulate

OUT = Path(__file__).resolve().parent / "out"
PROBE = 5000  # episodes learned at the start and at the end, to compare their cost
ROOT = Path(__file__).resolve().parent.parent


async def curve(episodes: int, after_break: int, block: int) -> Panel:
    world = World(7, task_types=3, procedure_length=3, vocabulary=9)
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        server = EngramServer(Path(tmp), ENGRAM_LOG_REQUESTS="false").start()
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
                started = time.perf_counter()
                run_ = await simulate(client, world, episodes=episodes, seed=7)
                learned = await learned_steps(client)
                quality = {
                    t.name: precision_recall(learned.get(t.name, []), t.procedure)
                    for t in world.task_types
                }
                procedures = {t.name: list(t.procedure) for t in world.task_types}
                broken = world.task_types[0].name
                world.break_procedure(broken)
                await simulate(
                    client, world, episodes=after_break, seed=8, run=run_, prefix="after"
                )
                took = time.perf_counter() - started
                skills = (await client.get("/v1/skills", params={"limit": 200})).json()["items"]
        finally:
            server.stop()
    chance = sum(chance_rate(world, t.name, trials=3000) for t in world.task_types) / 3
    print(
        "simulated world: 3 task types, 3-step hidden procedures, 9 actions each, 15% step failures"
    )
    print(
        f"{episodes} episodes, then one procedure broken, {after_break} more ({took:.0f} s over HTTP)"
    )
    print(f"{'episodes':>8}  {'with Engram':>11}  {'no memory':>9}")
    rows = run_.curve(block)
    for n, with_memory, without in rows:
        print(f"{n:>8}  {with_memory:>11.0%}  {without:>9.0%}")
    print(f"chance (no memory, Monte Carlo): {chance:.1%}")
    for name, (p, r) in quality.items():
        print(
            f"skill for {name} before the break: {learned.get(name)} (hidden: {procedures[name]})"
            f"  precision {p:.2f} recall {r:.2f}"
        )
    print(f"after the break, {broken} hides {world.task_type(broken).procedure}")
    for s in skills:  # an optional step ends in "?"
        steps = [x["action"] + ("?" if x.get("optional") else "") for x in s["steps"]]
        print(f"  {s['name']:<18} {s['status']:<9} v{s['version']} uses {s['uses']:>4}  {steps}")
    return Panel(
        "One procedure per task type: success per block of episodes (simulated agents)",
        rows,
        mark=(episodes, "procedure broken"),
        chance=chance,
    )


def episode_bodies(n: int, seed: int) -> list[bytes]:
    """Episodes of random agents in a larger simulated world (varied steps and outcomes)."""
    world = World(seed, task_types=6, procedure_length=4, vocabulary=12)
    agent = RandomAgent(world, seed)
    rng = random.Random(seed)
    names = [t.name for t in world.task_types]
    out = []
    for i in range(n):
        task_type = rng.choice(names)
        attempt = agent.attempt(task_type)
        body = {
            "task_id": f"s{seed}-{i}",
            "task_type": task_type,
            "context": {"domain": rng.choice(["web", "cli", "data"]), "tags": ["bench"]},
            "steps": attempt.steps,
            "outcome": attempt.outcome,
            "progress": attempt.progress,
        }
        out.append(orjson.dumps(body))
    return out


def worker_once(server: EngramServer) -> tuple[float, float, int]:
    """(wall s, CPU s, jobs) of `engram worker --once` run as its own process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "worker", "--once"],
        env=server.env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, int(done.stdout.split()[0])


async def ingest(server: EngramServer, bodies: list[bytes], connections: int = 32) -> float:
    requests = [build_request("POST", "/v1/episodes", b) for b in bodies]
    r = await run(server.port, lambda i: requests[i], connections=connections, total=len(requests))
    assert r.ok == len(requests), r.statuses
    return r.rate


async def scale(total: int) -> None:
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        # The API only stores; `engram worker --once` does all the learning, timed.
        server = EngramServer(
            Path(tmp), ENGRAM_LOG_REQUESTS="false", ENGRAM_LEARNING__WORKER="false"
        ).start()
        try:
            idle = worker_once(server)  # process start, imports, migrations: no jobs
            first = episode_bodies(PROBE, 1)
            await ingest(server, first)
            small = worker_once(server)
            bulk = episode_bodies(total - PROBE, 2)
            rate = await ingest(server, bulk)
            big = worker_once(server)
            last = episode_bodies(PROBE, 3)
            await ingest(server, last)
            late = worker_once(server)
            async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
                patterns = (await client.get("/v1/patterns", params={"limit": 1})).json()
                reflections = (await client.get("/v1/reflections", params={"limit": 1})).json()
                skills = (await client.get("/v1/skills", params={"limit": 200})).json()["items"]
                jobs = (await client.get("/v1/jobs", params={"limit": 1})).json()["counts"]
        finally:
            server.stop()
    print(f"episodes stored over HTTP at {rate:.0f}/s with the worker off")
    print(f"worker process with nothing to do (start, imports, migrations): {idle[0]:.1f} s")
    learn_all = small[0] + big[0] - 2 * idle[0]
    print(
        f"learn the first {PROBE:,} episodes: {small[0] - idle[0]:.2f} s wall, "
        f"{small[1]:.2f} s CPU, {small[2]} jobs"
    )
    print(
        f"learn {total - PROBE:,} more: {big[0] - idle[0]:.1f} s wall, {big[1]:.1f} s CPU, "
        f"{big[2]} jobs"
    )
    print(f"all {total:,} episodes: {learn_all:.1f} s of worker time (target <= 60 s)")
    per_small = (small[0] - idle[0]) / PROBE * 1000
    per_late = (late[0] - idle[0]) / PROBE * 1000
    print(
        f"one new episode: {per_small:.2f} ms with up to {PROBE:,} episodes of history, "
        f"{per_late:.2f} ms with {total:,} more (ratio {per_late / per_small:.2f})"
    )
    print(
        f"jobs by status: {jobs}; skills: {len(skills)} ({sum(s['status'] == 'active' for s in skills)} active)"
    )
    print(
        f"patterns listed first: {patterns['items'][0]['signature'] if patterns['items'] else None}; reflections: {bool(reflections['items'])}"
    )


async def ingest_with_worker(seconds: float) -> None:
    bodies = episode_bodies(60_000, 5)
    requests = [build_request("POST", "/v1/episodes", b) for b in bodies]
    rates = {}
    for label, worker in (("worker off", "false"), ("worker on", "true")):
        with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
            server = EngramServer(
                Path(tmp), ENGRAM_LOG_REQUESTS="false", ENGRAM_LEARNING__WORKER=worker
            ).start()
            try:
                await run(server.port, lambda i: requests[-1 - i], connections=32, total=1000)
                r = await run(server.port, lambda i: requests[i], connections=32, seconds=seconds)
                async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
                    counts = (await client.get("/v1/jobs", params={"limit": 1})).json()["counts"]
            finally:
                server.stop()
        rates[label] = r.rate
        print(line(f"POST /v1/episodes, {label}", r) + f"   jobs {counts}")
    print(
        f"ingest with the worker / without: {rates['worker on'] / rates['worker off']:.2f}  (target >= 0.8)"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    choices = ["curve", "context", "scale", "ingest", "all"]
    parser.add_argument("what", nargs="*", default=["all"], choices=choices)
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--curve-episodes", type=int, default=600)
    parser.add_argument("--after-break", type=int, default=300)
    parser.add_argument("--batch", type=int, default=400)
    parser.add_argument("--context-episodes", type=int, default=600)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--figure", type=Path, default=OUT / "learning.png")
    args = parser.parse_args()
    what = set(choices) if "all" in args.what else set(args.what)
    panels = []
    if "curve" in what:
        panels.append(await curve(args.curve_episodes, args.after_break, block=50))
    if "context" in what:
        panels.append(await context(batch=args.batch, episodes=args.context_episodes, block=50))
    if panels:
        args.figure.parent.mkdir(exist_ok=True)
        draw(panels, args.figure)
        print(f"curves drawn to {args.figure}")
    if "ingest" in what:
        await ingest_with_worker(args.seconds)
    if "scale" in what:
        await scale(args.episodes)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    asyncio.run(main())
