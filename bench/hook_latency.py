"""UserPromptSubmit's latency over many stored episodes, against a plain recall in the same run.

A fresh `engram serve` is filled with about N episodes of Claude Code sessions (the agent
world's, bench/agentsessions.py: Bash, Read, Edit, Grep calls in three projects, played by
agents without memory), posted over 32 connections: whole sessions through
`POST /v1/agents/sessions`, the path the hooks take, where the server has it; otherwise
each session's first turn through `POST /v1/episodes`, its truth as the outcome. The
worker learns them all; then `--calls` prompts of the world, each in a new session, are
sent both as a UserPromptSubmit hook event and as the `POST /v1/recall` the hook makes
(task type claude-code, budget 1,500 tokens), the two interleaved and alternating which
goes first, so that their ratio holds on a noisy machine.

    python -m bench.hook_latency [--episodes 10000] [--calls 300] [--seed 7]
        [--fill auto|sessions|episodes] [--tree DIR] [--json PATH]
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

from bench.agenthooks import Played, Task
from bench.agentsessions import PAIRS, blind_plan, new_task, play
from bench.agentworld import HOOK, server, settle
from bench.loadgen import run
from tests.system.raw_http import build_request

WARM_UP = 20


def sessions(n: int, seed: int, *, whole: bool) -> list[tuple[Task, Played]]:
    """Sessions of the world played by agents without memory: enough for `n` episodes, one
    per turn when imported `whole`, else one per session."""
    rng = random.Random(f"{seed}:filler")
    out: list[tuple[Task, Played]] = []
    episodes = 0
    while episodes < n:
        project, kind = rng.choice(PAIRS)
        task = new_task(project, kind, rng)
        out.append((task, play(task, blind_plan(kind, rng), rng)))
        episodes += len(out[-1][1].turns) if whole else 1
    return out


def import_body(task: Task, played: Played) -> bytes:
    """A whole session as `POST /v1/agents/sessions` takes it: the hooks' path, every turn."""
    cwd = task.project.cwd
    events: list[dict[str, Any]] = [
        {"kind": "start", "cwd": cwd},
        {"kind": "prompt", "cwd": cwd, "prompt": task.prompt},
    ]
    for e in played.events:
        name = e["hook_event_name"]
        if name == "UserPromptSubmit":
            events.append({"kind": "prompt", "cwd": cwd, "prompt": e["prompt"]})
        elif name in ("PostToolUse", "PostToolUseFailure"):
            failed = name == "PostToolUseFailure"
            events.append({
                "kind": "tool", "cwd": cwd, "tool": e["tool_name"], "input": e["tool_input"],
                "output": e.get("tool_response"), "error": e.get("error"), "failed": failed,
                "interrupted": bool(e.get("is_interrupt")), "call_id": e["tool_use_id"],
            })  # fmt: skip
        else:
            events.append({"kind": "stop" if name == "Stop" else "end", "cwd": cwd})
    body = {"agent": "claude-code", "session_id": task.session_id, "events": events}
    return orjson.dumps(body)


def episode_body(task: Task, played: Played) -> bytes:
    """A session's first turn as `POST /v1/episodes` takes it (for a server without imports):
    Claude Code's tool calls as steps, the world's truth as the outcome."""
    steps = []
    for e in played.events:
        if e["hook_event_name"] in ("UserPromptSubmit", "Stop"):
            break
        failed = e["hook_event_name"] == "PostToolUseFailure"
        steps.append({
            "action": e["tool_name"], "tool": e["tool_name"], "input": e["tool_input"],
            "output": None if failed else e["tool_response"], "status": "error" if failed else "ok",
            "error": e.get("error"),
        })  # fmt: skip
    body = {
        "task_id": f"claude-code:{task.session_id}",
        "agent_id": "claude-code",
        "task_type": "claude-code",
        "description": task.prompt,
        "context": {"tags": ["claude-code"], "features": {"project": task.project.name}},
        "steps": steps,
        "outcome": "success" if played.success else "failure",
        "metadata": {"session_id": task.session_id, "cwd": task.project.cwd},
    }
    return orjson.dumps(body)


async def count_episodes(client: httpx.AsyncClient) -> int:
    n, cursor = 0, None
    while True:
        params: dict[str, Any] = {"limit": 200, **({"cursor": cursor} if cursor else {})}
        page = (await client.get("/v1/episodes", params=params)).json()
        n += len(page["items"])
        if not (cursor := page.get("next_cursor")):
            return n


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
    parser.add_argument(
        "--fill",
        choices=["auto", "sessions", "episodes"],
        default="auto",
        help="sessions: imported whole (the hooks' path); episodes: first turns, faster; "
        "auto: sessions where the server takes them",
    )
    parser.add_argument("--tree", type=Path, default=None, help="run this checkout's server")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="engram-hook-latency-") as tmp:
        srv = server(Path(tmp), seed=args.seed, tree=args.tree).start()
        try:
            paths = httpx.get(f"{srv.url}/openapi.json", timeout=30).json()["paths"]
            whole = args.fill == "sessions" or (
                args.fill == "auto" and "/v1/agents/sessions" in paths
            )
            played = sessions(args.episodes, args.seed, whole=whole)
            if whole:
                path, bodies = "/v1/agents/sessions", [import_body(*s) for s in played]
            else:
                path, bodies = "/v1/episodes", [episode_body(*s) for s in played]
            requests = [build_request("POST", path, b) for b in bodies]
            filled = await run(srv.port, lambda i: requests[i], connections=32, total=len(requests))
            assert filled.ok == len(requests), filled.statuses
            async with httpx.AsyncClient(base_url=srv.url, timeout=60) as client:
                started = time.perf_counter()
                jobs = await settle(client, timeout=1800)
                learned = time.perf_counter() - started
                stored = await count_episodes(client)
                times = await measure(client, calls=args.calls, seed=args.seed)
        finally:
            srv.stop()
    figures: dict[str, Any] = {
        "episodes": stored,
        "filled_through": path,
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
        f"{stored:,} episodes stored through {path} ({len(requests):,} requests at "
        f"{filled.rate:.0f}/s), learned in {learned:.1f} s (jobs {jobs}); {args.calls} calls "
        "of each, interleaved:"
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
