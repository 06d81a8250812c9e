"""The soak's clients: one process drives many keep-alive connections through a mixed
agent workload and returns what it measured and every write the server acknowledged."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from tests.system.raw_http import build_request, read_response

WORDS = (
    "cache config database index query schema migration retry timeout pool socket"
    " thread lock queue worker batch stream parser token buffer latency deploy build"
    " test fixture mock coverage refactor module import package version release branch"
    " merge rebase commit review lint format type error exception trace log metric alert"
    " replica shard backup restore vacuum compaction snapshot checksum encoding unicode"
    " request response header cookie session auth permission role tenant namespace quota"
).split()
TASK_TYPES = ["fix_bug", "code_search", "write_test", "refactor", "deploy"]
TOOLS = ["shell", "editor", "search", "tests", "browser"]
# Relative frequency of each agent action; recall is followed by its reward.
MIX = {"ingest": 30, "memory_write": 15, "search": 20, "recall": 15, "read": 15, "list": 5}
TIMEOUT_S = 60.0  # a request with no answer by then is a transport error, not a slow one


@dataclass
class Stats:
    """Per operation: latencies (s), statuses and transport errors; acknowledged writes."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    statuses: dict[str, dict[int, int]] = field(default_factory=dict)
    transport: dict[str, dict[str, int]] = field(default_factory=dict)
    episodes: list[tuple[str, int]] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)
    recalls: list[str] = field(default_factory=list)
    exported_rows: list[int] = field(default_factory=list)
    server_errors: list[str] = field(default_factory=list)  # the first bodies of 5xx answers

    def add(self, op: str, status: int, seconds: float, *, measured: bool) -> None:
        by_status = self.statuses.setdefault(op, {})
        by_status[status] = by_status.get(status, 0) + 1
        if measured:
            self.latencies.setdefault(op, []).append(seconds)

    def failed(self, op: str, kind: str) -> None:
        by_kind = self.transport.setdefault(op, {})
        by_kind[kind] = by_kind.get(kind, 0) + 1

    def merge(self, other: Stats) -> None:
        for op, values in other.latencies.items():
            self.latencies.setdefault(op, []).extend(values)
        for src, dst in ((other.statuses, self.statuses), (other.transport, self.transport)):
            for op, counts in src.items():
                mine: dict[Any, int] = dst.setdefault(op, {})
                for key, n in counts.items():
                    mine[key] = mine.get(key, 0) + n
        self.episodes += other.episodes
        self.memories += other.memories
        self.recalls += other.recalls
        self.exported_rows += other.exported_rows
        self.server_errors += other.server_errors


class Conn:
    """One keep-alive connection; reopened after a transport error."""

    def __init__(self, port: int, stats: Stats) -> None:
        self.port = port
        self.stats = stats
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def call(
        self, op: str, method: str, path: str, body: Any = None, *, measured: bool
    ) -> tuple[int, bytes] | None:
        data = None if body is None else orjson.dumps(body)
        started = time.perf_counter()
        try:
            if self.streams is None:
                self.streams = await asyncio.open_connection("127.0.0.1", self.port)
            reader, writer = self.streams
            writer.write(build_request(method, path, data))
            status, payload = await asyncio.wait_for(read_response(reader), TIMEOUT_S)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
            self.stats.failed(op, type(exc).__name__)
            self.close()
            return None
        self.stats.add(op, status, time.perf_counter() - started, measured=measured)
        if status >= 500 and len(self.stats.server_errors) < 20:
            self.stats.server_errors.append(
                f"{op} {status} {payload[:300].decode(errors='replace')}"
            )
        return status, payload

    def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            self.streams = None


def _text(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(lo, hi)))


def episode(rng: random.Random, task_id: str) -> dict[str, Any]:
    task_type = rng.choice(TASK_TYPES)
    steps = [
        {
            "tool": rng.choice(TOOLS),
            "action": f"{task_type}_{j}" if rng.random() < 0.8 else rng.choice(WORDS),
            "input": {"cmd": _text(rng, 3, 8)},
            "output": {"text": _text(rng, 10, 40)},
            "status": "ok" if rng.random() < 0.9 else "error",
            "latency_ms": round(rng.uniform(5, 500), 1),
            "tokens": rng.randint(10, 400),
        }
        for j in range(rng.randint(2, 8))
    ]
    return {
        "task_id": task_id,
        "agent_id": f"agent-{rng.randint(0, 15)}",
        "task_type": task_type,
        "description": _text(rng, 5, 12),
        "context": {"domain": "python", "tags": [rng.choice(WORDS)]},
        "steps": steps,
        "outcome": rng.choice(["success", "success", "partial", "failure"]),
        "verdict": _text(rng, 4, 10),
    }


async def agent(conn: Conn, rng: random.Random, tag: str, stop: float, warm_until: float) -> None:
    """One agent's loop: a weighted mix of actions until `stop`."""
    stats, ops, weights = conn.stats, list(MIX), list(MIX.values())
    n = 0
    tasks: list[str] = []  # this agent's recorded tasks, which its recalls come back to
    while (now := time.perf_counter()) < stop:
        measured = now >= warm_until
        op = rng.choices(ops, weights)[0]
        n += 1
        if op == "ingest":
            body = episode(rng, f"soak-{tag}-{n}")
            got = await conn.call(op, "POST", "/v1/episodes", body, measured=measured)
            if got and got[0] == 201:
                stats.episodes.append((orjson.loads(got[1])["id"], len(body["steps"])))
                tasks.append(body["task_id"])
        elif op == "memory_write":
            memory = {
                "type": rng.choice(["fact", "procedure", "preference", "constraint"]),
                "content": _text(rng, 8, 30),
                "confidence": round(rng.random(), 2),
            }
            got = await conn.call(op, "POST", "/v1/memories", memory, measured=measured)
            if got and got[0] == 201:
                stats.memories.append(orjson.loads(got[1])["id"])
        elif op == "search":
            query = {"query": _text(rng, 2, 4), "limit": 10}
            await conn.call(op, "POST", "/v1/memories/search", query, measured=measured)
        elif op == "recall":
            await recall_and_reward(conn, rng, tasks, f"t-{tag}-{n}", measured=measured)
        elif op == "read" and stats.episodes:
            eid = rng.choice(stats.episodes)[0]
            await conn.call(op, "GET", f"/v1/episodes/{eid}", measured=measured)
        elif op == "list":
            await conn.call(op, "GET", "/v1/episodes?limit=20", measured=measured)


async def recall_and_reward(
    conn: Conn, rng: random.Random, tasks: list[str], new_task: str, *, measured: bool
) -> None:
    """Recall for a task (half the time one already recorded), then score it by recall or task."""
    task_id = rng.choice(tasks) if tasks and rng.random() < 0.5 else new_task
    body = {"task": _text(rng, 4, 10), "task_id": task_id, "token_budget": rng.choice([200, 800]),
            "task_type": rng.choice(TASK_TYPES)}  # fmt: skip
    got = await conn.call("recall", "POST", "/v1/recall", body, measured=measured)
    if not got or got[0] != 200:
        return
    recall_id = orjson.loads(got[1])["recall_id"]
    conn.stats.recalls.append(recall_id)
    reward: dict[str, Any] = (
        {"recall_id": recall_id, "value": rng.choice([-5, 0, 1, 10])}
        if rng.random() < 0.5
        else {"task_id": task_id, "signals": {"task_success": rng.random() < 0.7}}
    )
    await conn.call("reward", "POST", "/v1/rewards", reward, measured=measured)


async def exporter(conn: Conn, every: float, stop: float, warm_until: float) -> None:
    """Download the RL dataset (streamed NDJSON) every `every` seconds."""
    while time.perf_counter() + every < stop:
        await asyncio.sleep(every)
        measured = time.perf_counter() >= warm_until
        got = await conn.call("export", "GET", "/v1/rl/dataset?limit=5000", measured=measured)
        if got and got[0] == 200:
            conn.stats.exported_rows.append(got[1].count(b"\n"))


async def drive(
    port: int,
    *,
    clients: int,
    start_at: float,
    seconds: float,
    warmup: float,
    seed: int,
    export_every: float,
) -> Stats:
    """Run the agents from wall-clock `start_at`, so that every process shares the phases."""
    stats = Stats()
    await asyncio.sleep(max(0.0, start_at - time.time()))
    start = time.perf_counter()
    stop, warm_until = start + warmup + seconds, start + warmup
    conns = [Conn(port, stats) for _ in range(clients + (export_every > 0))]
    tasks = [
        agent(conn, random.Random(f"{seed}-{i}"), f"{seed}-{i}", stop, warm_until)
        for i, conn in enumerate(conns[:clients])
    ]
    if export_every > 0:
        tasks.append(exporter(conns[-1], export_every, stop, warm_until))
    await asyncio.gather(*tasks)
    for conn in conns:
        conn.close()
    return stats


def drive_process(port: int, kwargs: dict[str, Any]) -> Stats:
    """Entry point of a client process."""
    return asyncio.run(drive(port, **kwargs))
