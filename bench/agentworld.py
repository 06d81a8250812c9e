"""Does Engram learn from real Claude Code sessions? The agent world, over HTTP, measured.

Real-looking sessions (bench/agentsessions.py: three projects, five recurring kinds of
work, the same procedure each time with new arguments, noise around it) are sent as
Claude Code's hook events to a real `engram serve` (POST /v1/hooks/claude-code). The
simulated agent reads the context its session start and first prompt are answered with:
if it names commands of its procedure, it does those, in that order; otherwise it guesses. Measured per mode (on
a fresh server each: `--rewards` posts each session's truth to /v1/rewards, `--no-rewards`
posts nothing, as Claude Code is used):

- per (project, kind), fresh sessions asking in words never used in training: the share
  of the procedure's commands the context names in order (longest subsequence / length),
  and any command that only another project's procedures have (there must be none);
- the agent's success per block of sessions (it rises only if the memory helps);
- the share of the episodes the server labelled (not `unknown`) whose outcome agrees with
  the world's truth, and how many it labelled;
- memories per 1,000 turns, and UserPromptSubmit's latency p50/p95.

    python -m bench.agentworld [--sessions 20] [--seed 7] [--probes 3] [--rewards]
        [--no-rewards] [--json PATH] [--tree DIR]

Without --rewards or --no-rewards both modes run. --tree runs the server of another
checkout (say `git archive HEAD` unpacked) to compare two versions on the same world.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.agenthooks import Task, Turn
from bench.agentreport import (
    Figures,
    KindFigures,
    print_figures,
    probe_figures,
    project_signatures,
)
from bench.agentsessions import PAIRS, memory_plan, new_task, play
from tests.server import EngramServer

HOOK = "/v1/hooks/claude-code"
# The events after which learning may have work: a turn ends, a session ends, a prompt
# judges the turn before.
SETTLE_AFTER = ("Stop", "SessionEnd", "UserPromptSubmit")


@dataclass
class _Session:
    task: Task
    turns: list[Turn]
    success: bool
    followed: int  # procedure steps the agent took from the context


class _Client:
    """Hook events posted one by one, UserPromptSubmit timed."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.http = client
        self.prompt_ms: list[float] = []
        self.turns = 0

    async def send(self, event: dict[str, Any]) -> str:
        """Post one event; the additionalContext it is answered with ('' when none)."""
        started = time.perf_counter()
        response = await self.http.post(HOOK, json=event)
        if event["hook_event_name"] == "UserPromptSubmit":
            self.prompt_ms.append((time.perf_counter() - started) * 1000)
            self.turns += 1
        response.raise_for_status()
        out = response.json().get("hookSpecificOutput") or {}
        return str(out.get("additionalContext") or "")

    async def begin(self, task: Task) -> str:
        """SessionStart and the first prompt: the contexts they were answered with."""
        started = await self.send(
            task.event("SessionStart", source="startup", model="claude-sonnet-4-5")
        )
        prompted = await self.send(task.event("UserPromptSubmit", prompt=task.prompt))
        return f"{started}\n{prompted}"


async def settle(client: httpx.AsyncClient, *, timeout: float = 300.0) -> dict[str, int]:
    """Wait until the server's worker has run every job that is due and embedded every
    memory waiting for it; the job counts. A real session's events come seconds apart,
    time enough for both: waiting for them makes a run of a seed the same every time."""
    deadline = time.monotonic() + timeout
    while True:
        counts: dict[str, int] = (await client.get("/v1/jobs", params={"limit": 1})).json()[
            "counts"
        ]
        search = (await client.get("/ready")).json().get("search", {})
        pending = (search.get("embeddings") or {}).get("pending", 0)
        if not counts.get("queued") and not counts.get("running") and not pending:
            return counts
        if time.monotonic() > deadline:
            raise TimeoutError(f"still due after {timeout:.0f} s: {counts}, {pending} to embed")
        await asyncio.sleep(0.01)


async def world_figures(
    client: httpx.AsyncClient,
    *,
    sessions: int,
    rewards: bool,
    seed: int,
    probes: int = 3,
    block: int | None = None,
) -> Figures:
    """Run the world on a fresh server (`client`'s) and measure it: `sessions` sessions per
    (project, kind), each rewarded with its truth when `rewards`, then `probes` held-out
    asks per (project, kind)."""
    began = time.perf_counter()
    hooks = _Client(client)
    figures = Figures("rewards" if rewards else "no-rewards", seed, sessions)
    order = [pair for pair in PAIRS for _ in range(sessions)]
    tasks = random.Random(f"{seed}:tasks")
    tasks.shuffle(order)
    done: list[_Session] = []
    for n, (project, kind) in enumerate(order):
        task = new_task(project, kind, tasks)
        rng = random.Random(f"{seed}:session:{n}")
        plan, followed = memory_plan(task, await hooks.begin(task), rng)
        played = play(task, plan, rng)
        for event in played.events:
            await hooks.send(event)
            if event["hook_event_name"] in SETTLE_AFTER:
                await settle(client)
        if rewards:
            body = {
                "task_id": f"claude-code:{task.session_id}",
                "signals": {"task_success": played.final},
            }
            (await client.post("/v1/rewards", json=body)).raise_for_status()
        await settle(client)
        done.append(_Session(task, played.turns, played.success, followed))
    figures.sessions = len(done)
    figures.block = block or max(len(PAIRS), -(-len(done) // 5))  # five points or so
    figures.curve = _curve(done, figures.block)
    figures.outcomes = await _outcomes(client, done)
    figures.kinds = await _probe(hooks, done, seed=seed, probes=probes)
    figures.turns = hooks.turns  # the probes' too
    figures.jobs = await settle(client)
    await _count(client, figures)
    ms = sorted(hooks.prompt_ms)
    figures.prompt_latency_ms = {"p50": _pct(ms, 50), "p95": _pct(ms, 95), "n": float(len(ms))}
    figures.seconds = round(time.perf_counter() - began, 1)
    return figures


def _pct(data: list[float], p: float) -> float:
    return round(data[min(len(data) - 1, int(p / 100 * len(data)))], 2) if data else 0.0


def _curve(done: list[_Session], block: int) -> list[dict[str, float]]:
    out = []
    for start in range(0, len(done), block):
        part = done[start : start + block]
        out.append({
            "sessions": float(start + len(part)),
            "success": round(sum(s.success for s in part) / len(part), 3),
            "followed_memory": round(sum(s.followed > 0 for s in part) / len(part), 3),
        })  # fmt: skip
    return out


async def _outcomes(client: httpx.AsyncClient, done: list[_Session]) -> dict[str, Any]:
    """Each turn's episode (found by its prompt) against the turn's truth."""
    confusion: Counter[str] = Counter()
    episodes = unmatched = 0
    for session in done:
        params: dict[str, Any] = {"task_id": f"claude-code:{session.task.session_id}", "limit": 50}
        items = (await client.get("/v1/episodes", params=params)).json()["items"]
        episodes += len(items)
        turns = list(session.turns)
        for item in sorted(items, key=lambda e: e["created_at"]):
            turn = next((t for t in turns if t.prompt == item["description"]), None)
            if turn is None:
                unmatched += 1
                continue
            turns.remove(turn)
            if turn.truth is not None:
                confusion[f"{item['outcome']}/{'true' if turn.truth else 'false'}"] += 1
    judged = sum(confusion.values())
    labelled = {
        k: v for k, v in confusion.items() if k.split("/")[0] in ("success", "failure", "partial")
    }
    agree = sum(
        v for k, v in labelled.items() if (k.split("/")[0] == "success") == k.endswith("/true")
    )
    n = sum(labelled.values())
    return {
        "episodes": episodes, "unmatched": unmatched, "judged": judged, "labelled": n,
        "agree": round(agree / n, 3) if n else None, "confusion": dict(sorted(confusion.items())),
    }  # fmt: skip


async def _probe(
    hooks: _Client, done: list[_Session], *, seed: int, probes: int
) -> list[KindFigures]:
    """Fresh sessions asking for each kind in held-out words: what their context names."""
    rng = random.Random(f"{seed}:probes")
    foreign_of = project_signatures(seed)
    out, opened = [], []
    for project, kind in PAIRS:
        contexts, expected = [], []
        for _ in range(probes):
            task = new_task(project, kind, rng, held_out=True)
            await hooks.send(
                task.event("SessionStart", source="startup", model="claude-sonnet-4-5")
            )
            contexts.append(await hooks.send(task.event("UserPromptSubmit", prompt=task.prompt)))
            expected.append([s for sigs in task.step_signatures for s in sigs])
            opened.append(task)
        trained = [s for s in done if s.task.kind is kind]
        out.append(
            probe_figures(
                kind,
                contexts,
                expected,
                foreign_of[project.name],
                trained=[s.success for s in trained],
            )
        )
    for task in opened:  # closed only now: their episodes teach nothing to the probes after them
        await hooks.send(task.event("Stop", stop_hook_active=False))
        await hooks.send(task.event("SessionEnd", reason="prompt_input_exit"))
    return out


async def _count(client: httpx.AsyncClient, figures: Figures) -> None:
    types: Counter[str] = Counter()
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 200, **({"cursor": cursor} if cursor else {})}
        page = (await client.get("/v1/memories", params=params)).json()
        types.update(m["type"] for m in page["items"])
        if not (cursor := page.get("next_cursor")):
            break
    figures.memory_types = dict(sorted(types.items()))
    figures.memories = sum(types.values())
    figures.memories_per_1000_turns = round(1000 * figures.memories / max(1, figures.turns), 1)
    skills = (await client.get("/v1/skills", params={"limit": 200})).json()["items"]
    figures.skills = dict(Counter(s["status"] for s in skills))


def server(
    data_dir: Path, *, seed: int, tree: Path | None = None, embeddings: str = "auto"
) -> EngramServer:
    """A fresh `engram serve` for the world: open (no key), no rate limit, seeded recall,
    the embedder a user gets by default (the local model when installed)."""
    return EngramServer(
        data_dir,
        tree=tree,
        ENGRAM_EMBEDDINGS__PROVIDER=embeddings,
        ENGRAM_LOG_REQUESTS="false",
        ENGRAM_RATE_LIMIT__PER_SECOND="0",
        ENGRAM_RECALL__SEED=str(seed),
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=20, help="per (project, kind)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--probes", type=int, default=3, help="held-out asks per (project, kind)")
    parser.add_argument("--block", type=int, default=None, help="sessions per point of the curve")
    parser.add_argument("--rewards", action="store_true", help="run the mode that posts rewards")
    parser.add_argument("--no-rewards", action="store_true", help="run the mode that posts none")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--tree", type=Path, default=None, help="run this checkout's server")
    parser.add_argument(
        "--embeddings", default="auto", choices=["auto", "local", "none"],
        help="the server's embedder (none: kinds and search by words alone)",
    )  # fmt: skip
    args = parser.parse_args()
    modes = [m for m, on in ((True, args.rewards), (False, args.no_rewards)) if on] or [True, False]
    results = []
    for rewards in modes:
        with tempfile.TemporaryDirectory(prefix="engram-agentworld-") as tmp:
            srv = server(
                Path(tmp), seed=args.seed, tree=args.tree, embeddings=args.embeddings
            ).start()
            try:
                async with httpx.AsyncClient(base_url=srv.url, timeout=60) as client:
                    results.append(await world_figures(
                        client, sessions=args.sessions, rewards=rewards, seed=args.seed,
                        probes=args.probes, block=args.block,
                    ))  # fmt: skip
            finally:
                srv.stop()
    print_figures(results)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([f.as_json() for f in results], indent=2) + "\n")
        print(f"figures written to {args.json}")


if __name__ == "__main__":
    asyncio.run(main())
