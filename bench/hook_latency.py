"""UserPromptSubmit's latency over many stored episodes, against a plain recall in the same run.

A fresh `engram serve` is filled with N episodes shaped as Claude Code's hooks record them
(one per session of the agent world, bench/agentsessions.py: Bash, Read, Edit, Grep steps
with their inputs and outputs, in three projects, each with the world's truth as its
outcome), posted over 32 connections; the worker learns them all; then `--calls` prompts
of the world, each in a new session, are sent both as a UserPromptSubmit hook event and as
the `POST /v1/recall` the hook makes (task type claude-code, budget 1,500 tokens), the two
interleaved and alternating which goes first, so the ratio holds on a noisy machine.

    python -m bench.hook_latency [--episodes 10000] [--calls 300] [--seed 7] [--tree DIR]
        [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.agentsessions import PAIRS, blind_plan, new_task, play
from bench.agentworld import HOOK, server, settle
from bench.loadgen import run
from tests.system.raw_http import build_request

WARM_UP = 20


def episode_bodies(n: int, seed: int) -> list[bytes]:
    """`n` sessions of the world as the episodes their first turn makes."""
    rng = random.Random(f"{seed}:filler")
    out = []
    for _ in range(n):
        project, kind = rng.choice(PAIRS)
        task = new_task(project, kind, rng)
        played = play(task, blind_plan(kind, rng), rng)
        steps = []
        for event in played.events:
            if event["hook_event_name"] in ("UserPromptSubmit", "Stop"):
                break
            failed = event["hook_event_name"] == "PostToolUseFailure"
            steps.append({
                "action": event["tool_name"], "tool": event["tool_name"],
                "input": event["tool_input"], "output": None if failed else event["tool_response"],
                "status": "error" if failed else "ok", "error": event.get("error"),
            })  # fmt: skip
        body = {
            "task_id": f"claude-code:{task.session_id}",
            "agent_id": "claude-code",
            "task_type": "claude-code",
            "description": task.prompt,
            "context": {"tags": ["claude-code"], "features": {"project": project.name}},
            "steps": steps,
            "outcome": "success" if played.success else "failure",
            "metadata": {"session_id": task.session_id, "cwd": project.cwd},
        }
        out.append(orjson.dumps(body))
    return out


def _pct(data: list[float], p: float) -> float:
    ordered = sorted(data)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def measure(client: httpx.AsyncClient, *, calls: int, seed: int) -> dict[str, list[float]]:
    """Milliseconds of each UserPromptSubmit and each plain recall of the same prompts."""
    rng = random.Random(f"{seed}:calls")
    times: dict[str, list[float]] = {"hook": [], "recall": []}
    for i in range(WARM_UP + calls):
        project, kind = rng.choice(PAIRS)
        task = new_task(project, kind, rng, held_out=rng.random() < 0.5)
        event = task.event("UserPromptSubmit", prompt=task.prompt)
        recall = {
            "task": task.prompt, "task_id": f"claude-code:{task.session_id}-recall",
            "agent_id": "claude-code", "task_type": "claude-code", "token_budget": 1500,
        }  # fmt: skip
        calls_now = [("hook", HOOK, event), ("recall", "/v1/recall", recall)]
        for name, path, body in calls_now if i % 2 else reversed(calls_now):
            started = time.perf_counter()
            (await client.post(path, json=body)).raise_for_status()
            if i >= WARM_UP:
                times[name].append((time.perf_counter() - started) * 1000)
    return times


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tree", type=Path, default=None, help="run this checkout's server")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args()
    bodies = episode_bodies(args.episodes, args.seed)
    requests = [build_request("POST", "/v1/episodes", b) for b in bodies]
    with tempfile.TemporaryDirectory(prefix="engram-hook-latency-") as tmp:
        srv = server(Path(tmp), seed=args.seed, tree=args.tree).start()
        try:
            filled = await run(srv.port, lambda i: requests[i], connections=32, total=len(requests))
            assert filled.ok == len(requests), filled.statuses
            async with httpx.AsyncClient(base_url=srv.url, timeout=60) as client:
                started = time.perf_counter()
                jobs = await settle(client, timeout=1800)
                learned = time.perf_counter() - started
                times = await measure(client, calls=args.calls, seed=args.seed)
        finally:
            srv.stop()
    figures: dict[str, Any] = {
        "episodes": args.episodes,
        "ingest_per_s": round(filled.rate, 1),
        "learn_s": round(learned, 1),
        "jobs": jobs,
        "calls": args.calls,
    }
    for name, data in times.items():
        figures[name] = {"p50": round(_pct(data, 50), 2), "p95": round(_pct(data, 95), 2)}
    for p in ("p50", "p95"):
        figures[f"ratio_{p}"] = round(figures["hook"][p] / figures["recall"][p], 2)
    print(
        f"{args.episodes:,} hook-shaped episodes stored at {filled.rate:.0f}/s, learned in "
        f"{learned:.1f} s (jobs {jobs}); {args.calls} calls of each, interleaved:"
    )
    print(f"{'':<26}{'p50 ms':>8}{'p95 ms':>8}")
    for name, label in (("hook", "UserPromptSubmit hook"), ("recall", "POST /v1/recall")):
        print(f"{label:<26}{figures[name]['p50']:>8.1f}{figures[name]['p95']:>8.1f}")
    print(f"{'hook / recall':<26}{figures['ratio_p50']:>8.2f}{figures['ratio_p95']:>8.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
