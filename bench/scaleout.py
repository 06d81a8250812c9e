"""Scale-out: one API process against two on PostgreSQL, and libSQL against a SQLite file.

In one run, from the same load generator (bench/loadgen.py, `--clients` keep-alive
connections), a server started afresh for each round:

1. PostgreSQL, episode payloads in SQL (ENGRAM_BLOB_STORE=sql): `engram serve` against
   `engram serve --workers 2` (uvicorn's supervisor, one port), in pairs of rounds whose
   order alternates (1 2, 2 1, 1 2 ...): first `POST /v1/recall` against `--memories`
   memories, then `POST /v1/episodes` (4 steps and an outcome), `--seconds` a round. All
   recall rounds come first: learning writes a reflection memory per episode, which later
   recalls would search too. The API processes run with ENGRAM_LEARNING__WORKER=false and
   one `engram worker` beside them in both configurations (`--learning off`: no worker,
   jobs queue and nothing runs them); after each ingest round its queue is left to drain,
   untimed. Printed: each figure's ratio 2 processes / 1 (of the means, and the median of
   the pairs'), the cores each process used, and how the connections were split.
2. Against a libSQL server (sqld, `libsql://...?tls=0`), the same server with an embedded
   replica (ENGRAM_DATABASE_REPLICA) and a SQLite file, payloads in SQL and learning off,
   `--rounds` rounds in rotating order, each a recall then an ingest phase; ratios against
   SQLite. With --latency-ms, sqld and the replica again behind each added round trip (a
   delaying relay on loopback, bench/delay.py), and how many recalls were in flight at
   once (recalls/s x p50: about 1 where a process serves one request at a time).

    python -m bench.scaleout [--seconds 5] [--clients 32] [--memories 3000] [--pairs 3]
        [--rounds 2] [--postgres-url URL] [--learning worker|off] [--skip-postgres]
        [--skip-libsql] [--latency-ms 5,25] [--env ENGRAM_X=VALUE ...]

PostgreSQL comes from --postgres-url or ENGRAM_TEST_DATABASE_URL (emptied first); sqld
from tests/sqld.py (ENGRAM_TEST_SQLD). Without either, that part is skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
from sqlalchemy import func, select
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.config import Settings
from app.db.backends import create_engine
from app.models import Job, Memory
from bench.loadgen import Result, run
from bench.recall import bulk_load, memories_text
from tests.server import EngramServer, EngramWorker, reset_database
from tests.system.raw_http import build_request

TICK = os.sysconf("SC_CLK_TCK")
COMMON_ENV = {
    "ENGRAM_BLOB_STORE": "sql",
    "ENGRAM_LEARNING__WORKER": "false",
    "ENGRAM_LOG_REQUESTS": "false",
}
TASK_TYPES = ["deploy", "triage", "migrate"]


# --- requests ----------------------------------------------------------------------------


def episode(tag: str, i: int) -> bytes:
    """A completed episode of 4 steps (about 1 KB); one in five fails."""
    task_type = TASK_TYPES[i % 3]
    body = {
        "task_id": f"{tag}-{i}",
        "agent_id": f"agent-{i % 16}",
        "task_type": task_type,
        "context": {"domain": "ops", "tags": [task_type]},
        "steps": [
            {
                "tool": "shell",
                "action": f"{task_type}_step_{j}",
                "input": {"cmd": f"run {task_type} stage {j} --target svc-{i % 50}"},
                "output": {"lines": [f"stage {j} of {task_type}: item {k} ok" for k in range(3)]},
                "status": "ok",
                "latency_ms": 10.0 + j,
                "tokens": 30 + j,
            }
            for j in range(4)
        ],
        "outcome": "failure" if i % 5 == 4 else "success",
    }
    return build_request("POST", "/v1/episodes", orjson.dumps(body))


def recalls(texts: list[str], n: int = 2000) -> list[bytes]:
    """Recall requests whose task is the first 10 words of a memory (as bench.recall)."""
    rng = random.Random(1)
    picks = [texts[rng.randrange(len(texts))] for _ in range(n)]
    return [
        build_request(
            "POST",
            "/v1/recall",
            orjson.dumps({"task": " ".join(t.split()[:10]), "token_budget": 400, "k": 8}),
        )
        for t in picks
    ]


# --- CPU, from /proc ---------------------------------------------------------------------


def processes() -> dict[int, tuple[str, int, float]]:
    """pid -> (command name, parent pid, CPU seconds so far) of every process, with those of
    its children that exited and were waited for."""
    out = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        comm = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2 :].split()
        # Its own time and its reaped children's (PostgreSQL's connections that closed).
        ticks = sum(int(v) for v in fields[11:15])
        out[int(entry.name)] = (comm, int(fields[1]), ticks / TICK)
    return out


def machine_busy() -> float:
    """CPU seconds the machine spent busy so far (every core)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values[:8]) - idle) / TICK


def descendants(table: dict[int, tuple[str, int, float]], root: int) -> set[int]:
    found = {root}
    grew = True
    while grew:
        grew = False
        for pid, (_, ppid, _) in table.items():
            if ppid in found and pid not in found:
                found.add(pid)
                grew = True
    return found


class CpuMeter:
    """Cores used over a phase by the load generator (this process), the API processes,
    the worker, the database server, and everything else (the machine's busy time less
    those: other jobs, the kernel)."""

    def __init__(
        self, api: int, serving: list[int], worker: int | None = None, database: int | None = None
    ):
        self.roots = {"api": api, "worker": worker, "db": database}
        self.serving = serving

    def __enter__(self) -> CpuMeter:
        self.before = processes()
        self.busy0 = machine_busy()
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        after = processes()
        seconds = time.monotonic() - self.t0
        busy = (machine_busy() - self.busy0) / seconds

        def used(pids: set[int]) -> float:
            total = 0.0
            for pid in pids:
                if pid in after:
                    total += after[pid][2] - (self.before[pid][2] if pid in self.before else 0.0)
            return total / seconds

        groups: dict[str, set[int]] = {"client": {os.getpid()}}
        for name, root in self.roots.items():
            if root is not None:
                groups[name] = descendants(after, root)
        if self.roots["db"] is None:  # PostgreSQL: every process named postgres
            groups["db"] = {pid for pid, (comm, _, _) in after.items() if comm == "postgres"}
        self.cores = {name: used(pids) for name, pids in groups.items()}
        self.cores["other"] = max(0.0, busy - sum(self.cores.values()))
        self.cores["machine"] = busy
        self.per_api_process = sorted((used({pid}) for pid in self.serving), reverse=True)


def connections_per_process(port: int, pids: list[int]) -> list[int]:
    """Established connections to `port` each process holds."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if int(parts[1].rsplit(":", 1)[1], 16) == port and parts[3] == "01":
                inodes.add(f"socket:[{parts[9]}]")
    counts = []
    for pid in pids:
        n = 0
        try:
            for fd in os.scandir(f"/proc/{pid}/fd"):
                try:
                    n += os.readlink(fd.path) in inodes
                except OSError:
                    pass
        except OSError:
            pass
        counts.append(n)
    return counts


# --- one phase ---------------------------------------------------------------------------


@dataclass
class Phase:
    """One configuration's recall or ingest phase on a server started for it."""

    config: str
    kind: str  # "recall" or "ingest"
    result: Result
    cpu: dict[str, float]
    api_cores: list[float] = field(default_factory=list)
    connections: list[int] = field(default_factory=list)
    drain_s: float = 0.0

    def figures(self) -> dict[str, float]:
        r = self.result
        if self.kind == "ingest":
            return {"episodes_per_s": r.rate, "ingest_p50_ms": r.pct(50)}
        return {"recalls_per_s": r.rate, "recall_p50_ms": r.pct(50), "recall_p95_ms": r.pct(95)}

    def failures(self) -> str:
        statuses = {s: n for s, n in self.result.statuses.items() if not 200 <= s < 300}
        if not (self.result.errors or statuses):
            return ""
        return f"{self.result.errors} connection errors, statuses {statuses}"


def server_pids(server: EngramServer) -> list[int]:
    """The processes that serve requests: uvicorn's children under --workers, else itself."""
    assert server.proc is not None
    table = processes()
    children = [
        pid
        for pid, (comm, ppid, _) in table.items()
        if ppid == server.proc.pid and comm.startswith("python")
    ]
    # multiprocessing's resource tracker is a child too, and serves nothing.
    served = [pid for pid in children if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()]
    return served or [server.proc.pid]


def wait_started(server: EngramServer, processes_: int, timeout: float = 60.0) -> None:
    """Every API process has finished starting (the first one answers /health earlier)."""
    deadline = time.monotonic() + timeout
    while server.log().count("Application startup complete") < processes_:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{processes_} API processes did not start: {server.log()}")
        time.sleep(0.05)


async def wait_search_index(url: str, timeout: float = 120.0) -> None:
    """On SQLite, the in-memory search index is built (it builds in the background)."""
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        while True:
            index = (await client.get("/ready")).json().get("search_index")
            if index is None or index.get("state") == "ready":
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"search index not ready: {index}")
            await asyncio.sleep(0.1)


class Load:
    """The requests of both phases: recalls from the corpus, episodes tagged per phase."""

    def __init__(self, recall_requests: list[bytes], args: argparse.Namespace) -> None:
        self.recall_requests = recall_requests
        self.args = args

    def requests(self, kind: str, tag: str) -> tuple[Any, Any]:
        """(warm-up, measured) request makers of a phase."""
        if kind == "recall":
            reqs, n = self.recall_requests, len(self.recall_requests)
            return (lambda i: reqs[-1 - i % n]), (lambda i: reqs[i % n])
        bodies = [episode(tag, i) for i in range(int(self.args.seconds * 4000))]

        def ingest(i: int) -> bytes:
            return bodies[i] if i < len(bodies) else episode(tag, i)

        return (lambda i: episode(f"{tag}-warm", i)), ingest


async def measure(
    server: EngramServer,
    config: str,
    kind: str,
    tag: str,
    load: Load,
    *,
    worker: int | None = None,
    database: int | None = None,
) -> Phase:
    """One second of warm-up, then `--seconds` of `kind` from `--clients` connections, the
    CPU of each process metered and the connections each API process holds counted midway."""
    assert server.proc is not None
    args = load.args
    pids = server_pids(server)
    warm, make = load.requests(kind, tag)
    await run(server.port, warm, connections=args.clients, seconds=1)
    seen: list[int] = []

    async def sample_connections() -> None:
        await asyncio.sleep(args.seconds / 2)
        seen.extend(connections_per_process(server.port, pids))

    sampler = asyncio.create_task(sample_connections())
    with CpuMeter(server.proc.pid, pids, worker, database) as cpu:
        result = await run(server.port, make, connections=args.clients, seconds=args.seconds)
    await sampler
    return Phase(config, kind, result, cpu.cores, cpu.per_api_process, seen)


async def count_rows(url: str, model: Any, *where: Any) -> int:
    engine = create_engine(Settings(database_url=url))
    try:
        async with engine.connect() as conn:
            query = select(func.count()).select_from(model).where(*where)
            return int(await conn.scalar(query) or 0)
    finally:
        await engine.dispose()


async def drain(url: str, timeout: float) -> float:
    """Seconds until the worker has run every queued job (at most `timeout`)."""
    t0 = time.monotonic()
    while await count_rows(url, Job, Job.status.not_in(("done", "dead"))):
        if time.monotonic() - t0 > timeout:
            break
        await asyncio.sleep(0.25)
    return time.monotonic() - t0


def progress(p: Phase) -> None:
    f = p.figures()
    if p.kind == "ingest":
        figures = f"{f['episodes_per_s']:7.0f} episodes/s  p50 {f['ingest_p50_ms']:6.1f} ms       "
    else:
        figures = (
            f"{f['recalls_per_s']:7.0f} recalls/s   p50 {f['recall_p50_ms']:6.1f} ms"
            f" p95 {f['recall_p95_ms']:6.1f} ms"
        )
    split = f"  connections {'/'.join(map(str, p.connections))}" if len(p.connections) > 1 else ""
    cores = "  ".join(f"{k} {v:.2f}" for k, v in p.cpu.items())
    drained = f"  then drained in {p.drain_s:.0f} s" if p.drain_s else ""
    print(f"  {p.config:<24} {figures}  cores: {cores}{split}{drained}", flush=True)
    if p.failures():
        print(f"    not 2xx: {p.failures()}", flush=True)


# --- the two parts -----------------------------------------------------------------------


async def postgres_part(url: str, texts: list[str], load: Load, tmp: Path) -> list[Phase]:
    """Every recall round first, against the loaded memories alone (learning writes a
    reflection memory per episode, which later recalls would search too), then every
    ingest round, the worker's queue drained after each."""
    args = load.args
    await reset_database(url)
    await bulk_load(url, texts, 0)
    worker = None
    if args.learning == "worker":
        worker = EngramWorker(tmp / "worker.log", database_url=url, **args.server_env).start()
    worker_pid = worker.proc.pid if worker is not None and worker.proc is not None else None
    phases: list[Phase] = []
    try:
        for kind in ("recall", "ingest"):
            if kind == "ingest":
                memories = await count_rows(url, Memory)
                print(f"  ({memories} memories during the recall rounds)", flush=True)
            for pair in range(args.pairs):
                for procs in (1, 2) if pair % 2 == 0 else (2, 1):
                    serve_args = ["--workers", "2"] if procs == 2 else []
                    server = EngramServer(
                        tmp / f"pg-{kind}-{pair}-{procs}",
                        database_url=url,
                        args=serve_args,
                        **args.server_env,
                    ).start()
                    try:
                        wait_started(server, procs)
                        config = PG_CONFIGS[procs - 1]
                        tag = f"pg{pair}{procs}"
                        p = await measure(server, config, kind, tag, load, worker=worker_pid)
                    finally:
                        server.stop()
                    if worker is not None and kind == "ingest":
                        p.drain_s = await drain(url, args.drain_timeout)
                    phases.append(p)
                    progress(p)
    finally:
        if worker is not None:
            worker.stop()
    return phases


def lite_configs(args: argparse.Namespace) -> list[str]:
    """SQLite, sqld and its embedded replica over loopback, then both behind each of
    --latency-ms's added round trips."""
    found = list(LITE_CONFIGS)
    for ms in args.latency_ms:
        found += [f"{LITE_CONFIGS[1]}, +{ms:g} ms", f"{LITE_CONFIGS[2]}, +{ms:g} ms"]
    return found


async def libsql_part(texts: list[str], load: Load, tmp: Path) -> list[Phase]:
    """Each configuration's server started per round for a recall phase, then an ingest
    phase (learning off: no memory is added)."""
    from bench.delay import DelayProxy
    from tests.sqld import Sqld

    args = load.args
    sqld = Sqld(tmp / "sqld").start()
    proxies: list[DelayProxy] = []
    try:
        sqlite_url = f"sqlite+aiosqlite:///{tmp}/sqlite/engram.db"
        (tmp / "sqlite").mkdir()
        await bulk_load(sqlite_url, texts, 0)
        await bulk_load(sqld.url, texts, 0)
        sqld_pid = sqld.proc.pid if sqld.proc is not None else None
        names = lite_configs(args)
        configs: dict[str, tuple[str, dict[str, Any], int | None]] = {
            names[0]: (sqlite_url, {}, None)
        }
        for ms in [0.0, *args.latency_ms]:
            url = sqld.url
            if ms:
                where = make_url(sqld.url)
                proxies.append(DelayProxy((where.host or "127.0.0.1", int(where.port or 0)), ms))
                url = where.set(port=proxies[-1].port).render_as_string()
            suffix = f", +{ms:g} ms" if ms else ""
            configs[LITE_CONFIGS[1] + suffix] = (url, {}, sqld_pid)
            replica = {"ENGRAM_DATABASE_REPLICA": str(tmp / f"replica{ms:g}" / "replica.db")}
            configs[LITE_CONFIGS[2] + suffix] = (url, replica, sqld_pid)
        phases: list[Phase] = []
        count = len(names)
        for n in range(args.rounds):
            order = names[n % count :] + names[: n % count]
            for name in order if n % 2 == 0 else order[::-1]:
                url, env, database = configs[name]
                i = names.index(name)
                server = EngramServer(
                    tmp / f"lite-{n}-{i}", database_url=url, **args.server_env, **env
                ).start()
                try:
                    await wait_search_index(server.url)
                    for kind in ("recall", "ingest"):
                        p = await measure(
                            server, name, kind, f"lite{n}{i}", load, database=database
                        )
                        phases.append(p)
                        progress(p)
                finally:
                    server.stop()
        return phases
    finally:
        for proxy in proxies:
            proxy.stop()
        sqld.stop()


# --- summary -----------------------------------------------------------------------------

PG_CONFIGS = ["1 API process", "2 API processes"]
LITE_CONFIGS = ["SQLite file", "libSQL server (sqld)", "libSQL embedded replica"]
COLUMNS = [
    ("episodes_per_s", "episodes/s", "{:10.0f}"),
    ("ingest_p50_ms", "ingest p50", "{:7.1f} ms"),
    ("recalls_per_s", "recalls/s", "{:9.0f}"),
    ("recall_p50_ms", "recall p50", "{:7.1f} ms"),
    ("recall_p95_ms", "recall p95", "{:7.1f} ms"),
]


def of(phases: list[Phase], config: str, kind: str | None = None) -> list[Phase]:
    return [p for p in phases if p.config == config and kind in (None, p.kind)]


def means(phases: list[Phase], config: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for kind in ("ingest", "recall"):
        chosen = of(phases, config, kind)
        for key in chosen[0].figures():
            out[key] = statistics.mean(p.figures()[key] for p in chosen)
    return out


def mean_cpu(phases: list[Phase]) -> dict[str, float]:
    return {k: statistics.mean(p.cpu[k] for p in phases) for k in phases[0].cpu}


def table(rows: dict[str, dict[str, float]], ratios: dict[str, dict[str, float]]) -> list[str]:
    width = max(len(name) for name in [*rows, *ratios]) + 2
    lines = [" " * width + "  ".join(f"{title:>10}" for _, title, _ in COLUMNS)]
    for name, values in rows.items():
        cells = [fmt.format(values[key]).rjust(10) for key, _, fmt in COLUMNS]
        lines.append(name.ljust(width) + "  ".join(cells))
    for name, values in ratios.items():
        cells = [f"{values[key]:9.2f}x" for key, _, _ in COLUMNS]
        lines.append(name.ljust(width) + "  ".join(cells))
    return lines


def cpu_lines(phases: list[Phase], configs: list[str]) -> list[str]:
    lines = []
    for kind in ("ingest", "recall"):
        lines.append(f"  cores used in the {kind} phases:")
        for config in configs:
            cores = mean_cpu(of(phases, config, kind))
            lines.append(f"    {config:<24} " + "  ".join(f"{k} {v:.2f}" for k, v in cores.items()))
    return lines


def summarise_postgres(phases: list[Phase], args: argparse.Namespace) -> dict[str, Any]:
    one, two = PG_CONFIGS
    # Ratio 2 / 1 of each pair of rounds (adjacent in time), then their median.
    pair_ratios: dict[str, list[float]] = {key: [] for key, _, _ in COLUMNS}
    for kind in ("ingest", "recall"):
        ordered = [p for p in phases if p.kind == kind]
        for a, b in zip(ordered[::2], ordered[1::2], strict=True):
            first, second = (a, b) if a.config == one else (b, a)
            for key, value in second.figures().items():
                pair_ratios[key].append(value / first.figures()[key])
    m1, m2 = means(phases, one), means(phases, two)
    ratio_of_means = {key: m2[key] / m1[key] for key, _, _ in COLUMNS}
    median_ratio = {key: statistics.median(v) for key, v in pair_ratios.items()}
    learning = (
        "API processes with ENGRAM_LEARNING__WORKER=false and one engram worker beside them"
        if args.learning == "worker"
        else "learning off (API processes' worker off, no engram worker)"
    )
    print()
    print(
        f"PostgreSQL, payloads in SQL; {learning}; {args.clients} clients,"
        f" {args.seconds:g} s per phase, {args.pairs} pairs of rounds per phase,"
        f" {args.memories} memories (means of rounds; latencies: below 1x is faster)"
    )
    for line in table(
        {one: m1, f"{two} (--workers 2)": m2},
        {"2 / 1 (ratio of means)": ratio_of_means, "2 / 1 (median of pairs)": median_ratio},
    ):
        print(line)
    print(
        "  client = the load generator, db = PostgreSQL (every postgres process), other = the"
        " rest of the machine's busy time (other jobs, the kernel)"
    )
    for line in cpu_lines(phases, PG_CONFIGS):
        print(line)
    for kind in ("ingest", "recall"):
        split = ", ".join(
            "+".join(f"{c:.2f}" for c in p.api_cores) + f" ({'/'.join(map(str, p.connections))})"
            for p in of(phases, two, kind)
        )
        print(f"  2 processes, {kind}: cores of each (connections each held): {split}")
    return {
        one: m1,
        two: m2,
        "ratio_of_means": ratio_of_means,
        "median_pair_ratio": median_ratio,
        "pair_ratios": pair_ratios,
        "cpu": {
            f"{config}, {kind}": mean_cpu(of(phases, config, kind))
            for config in PG_CONFIGS
            for kind in ("ingest", "recall")
        },
        "learning": args.learning,
    }


def summarise_libsql(phases: list[Phase], args: argparse.Namespace) -> dict[str, Any]:
    names = lite_configs(args)
    rows = {name: means(phases, name) for name in names}
    base = rows[names[0]]
    ratios = {
        f"{name} / SQLite": {key: rows[name][key] / base[key] for key, _, _ in COLUMNS}
        for name in names[1:]
    }
    print()
    print(
        f"libSQL against a SQLite file: payloads in SQL, learning off; {args.clients} clients,"
        f" {args.seconds:g} s per phase, {args.rounds} rounds, {args.memories} memories"
    )
    for line in table(rows, ratios):
        print(line)
    print("  db = sqld; SQLite runs inside the API process")
    # Little's law: recalls in flight at once (1 where a process serves one at a time).
    for name in names[1:]:
        row = rows[name]
        flight = row["recalls_per_s"] * row["recall_p50_ms"] / 1000
        print(f"  {name}: recalls in flight {flight:.1f}")
    for line in cpu_lines(phases, names):
        print(line)
    return {
        "configurations": rows,
        "ratios_to_sqlite": ratios,
        "cpu": {
            f"{config}, {kind}": mean_cpu(of(phases, config, kind))
            for config in names
            for kind in ("ingest", "recall")
        },
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0, help="per phase")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--memories", type=int, default=3000)
    parser.add_argument("--pairs", type=int, default=3, help="PostgreSQL: 1-and-2 pairs")
    parser.add_argument("--rounds", type=int, default=2, help="libSQL: rounds of the three")
    parser.add_argument("--postgres-url", default=os.environ.get("ENGRAM_TEST_DATABASE_URL"))
    parser.add_argument("--learning", choices=["worker", "off"], default="worker")
    parser.add_argument("--drain-timeout", type=float, default=90.0)
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--skip-libsql", action="store_true")
    parser.add_argument(
        "--latency-ms",
        type=lambda text: [float(v) for v in text.split(",") if v],
        default=[],
        help="libSQL: also behind these added round trips, comma-separated (say 5,25)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="ENGRAM_X=VALUE",
        help="a setting for every server and the worker (repeatable)",
    )
    args = parser.parse_args()
    args.server_env = COMMON_ENV | dict(item.split("=", 1) for item in args.env)

    t0 = time.perf_counter()
    texts = memories_text(args.memories)
    load = Load(recalls(texts), args)
    print(f"corpus: {len(texts)} memories ({time.perf_counter() - t0:.0f} s to build)", flush=True)
    out: dict[str, Any] = {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": args.seconds,
        "clients": args.clients,
        "memories": args.memories,
        "cores": os.cpu_count(),
        "server_env": args.server_env,
    }
    pg_rounds: list[Phase] = []
    lite_rounds: list[Phase] = []
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as name:
        tmp = Path(name)
        if args.skip_postgres:
            print("PostgreSQL: skipped")
        elif not args.postgres_url:
            print("PostgreSQL: skipped (no --postgres-url or ENGRAM_TEST_DATABASE_URL)")
        else:
            print("PostgreSQL rounds:", flush=True)
            pg_rounds = await postgres_part(args.postgres_url, texts, load, tmp)
        try:
            import tests.sqld as sqld_module
        except ImportError:
            sqld_module = None  # type: ignore[assignment]
        if args.skip_libsql:
            pass
        elif sqld_module is None or sqld_module.binary() is None:
            print("libSQL: skipped (no tests/sqld.py in this checkout, or no sqld binary)")
        else:
            print("libSQL and SQLite rounds:", flush=True)
            lite_rounds = await libsql_part(texts, load, tmp)
    if pg_rounds:
        out["postgres"] = summarise_postgres(pg_rounds, args)
    if lite_rounds:
        out["libsql"] = summarise_libsql(lite_rounds, args)
    out["phases"] = [
        {
            "config": p.config,
            "kind": p.kind,
            **p.figures(),
            "cpu": p.cpu,
            "api_cores": p.api_cores,
            "connections": p.connections,
            "drain_s": p.drain_s,
            "failures": p.failures(),
        }
        for p in [*pg_rounds, *lite_rounds]
    ]
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    path = Path(__file__).resolve().parent / "out"
    path.mkdir(exist_ok=True)
    (path / "scaleout.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    import uvloop

    # uvloop: a cheaper load generator on the machine it shares with the servers.
    uvloop.run(main())
