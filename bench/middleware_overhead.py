"""What the middleware stack costs a small request: this checkout against another one.

Each checkout's app runs in a process of its own (both are the package `app`) and is
called in-process, with no sockets: CPU time of the event loop's thread per request,
which other processes' load barely moves. Rounds alternate the checkouts and their
order; medians are compared. Three requests: GET /health (no body), POST /v1/recall
with an invalid body (read, parsed, refused: 422) and a refused cross-site POST (403).
With --fast-routes, the three calls agents make for every task too (POST /v1/memories,
/v1/episodes, /v1/recall); with --server, the real servers: requests per second and
server CPU per GET /health.

    python -m bench.middleware_overhead --other /tmp/engram-old [--rounds 10]
        [--fast-routes] [--server]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
PROBES: dict[str, tuple[str, str, list[tuple[bytes, bytes]], bytes]] = {
    "GET /health": ("GET", "/health", [], b""),
    "POST /v1/recall 422": (
        "POST",
        "/v1/recall",
        [(b"content-type", b"application/json"), (b"content-length", b"2")],
        b"{}",
    ),
    "POST cross-site 403": (
        "POST",
        "/v1/memories",
        [(b"content-type", b"text/plain"), (b"origin", b"https://evil.example")],
        b"{}",
    ),
}
_JSON = [(b"content-type", b"application/json")]
# The three calls agents make for every task (with --fast-routes; a tenth of the requests).
FAST_ROUTES: dict[str, tuple[str, str, list[tuple[bytes, bytes]], bytes]] = {
    "POST /v1/memories 201": (
        "POST",
        "/v1/memories",
        _JSON,
        b'{"type": "fact", "content": "the build needs make before the tests"}',
    ),
    "POST /v1/episodes 201": (
        "POST",
        "/v1/episodes",
        _JSON,
        b'{"task_id": "t1", "action": "ran make", "context": {"domain": "build"}}',
    ),
    "POST /v1/recall 200": (
        "POST",
        "/v1/recall",
        _JSON,
        b'{"task": "build the project and run the tests", "token_budget": 500}',
    ),
}


def _scope(method: str, path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), *headers],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8080),
    }


async def _serve_rounds(tree: Path, tmp: Path, *, fast_routes: bool) -> None:
    """The worker: reads a request count per line, answers with CPU us per request."""
    sys.path.insert(0, str(tree))
    from app.core.config import Settings
    from app.main import create_app

    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{tmp}/engram.db",
        blob_dir=tmp / "blobs",
        log_requests=False,
    )
    settings.learning.worker = False
    app = create_app(settings)
    statuses: dict[str, int] = {}
    probes = [(name, probe, 1) for name, probe in PROBES.items()]
    if fast_routes:
        probes += [(name, probe, 10) for name, probe in FAST_ROUTES.items()]

    async with app.router.lifespan_context(app):
        for line in sys.stdin:
            n = int(line)
            out: dict[str, float] = {}
            for name, (method, path, headers, body), fewer in probes:
                scope = _scope(method, path, headers)
                message = {"type": "http.request", "body": body, "more_body": False}

                async def receive(message: dict[str, Any] = message) -> dict[str, Any]:
                    return message

                async def send(sent: dict[str, Any], name: str = name) -> None:
                    if sent["type"] == "http.response.start":
                        statuses[name] = sent["status"]

                count = max(1, n // fewer)
                started = time.thread_time()
                for _ in range(count):
                    await app(dict(scope), receive, send)
                out[name] = (time.thread_time() - started) / count * 1e6
            print(json.dumps({"us": out, "statuses": statuses}), flush=True)


class Worker:
    def __init__(self, tree: Path, tmp: Path, *, fast_routes: bool) -> None:
        self.tree = tree
        flags = ["--fast-routes"] if fast_routes else []
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", str(tree), "--tmp", str(tmp), *flags],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tmp,
        )

    def run(self, n: int) -> dict[str, Any]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(f"{n}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker for {self.tree} exited")
        result: dict[str, Any] = json.loads(line)
        return result

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _in_process(trees: dict[str, Path], *, rounds: int, requests: int, fast_routes: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workers = {}
        for name, tree in trees.items():
            (Path(tmp) / name).mkdir()
            workers[name] = Worker(tree, Path(tmp) / name, fast_routes=fast_routes)
        try:
            for worker in workers.values():
                print(f"{worker.tree}: statuses {worker.run(requests // 4)['statuses']}")
            times: dict[str, dict[str, list[float]]] = {n: {} for n in trees}
            for i in range(rounds):
                for name in sorted(trees, reverse=i % 2 == 1):
                    us = workers[name].run(requests)["us"]
                    for probe, value in us.items():
                        times[name].setdefault(probe, []).append(value)
                    shown = ", ".join(f"{p} {v:.1f}" for p, v in us.items())
                    print(f"round {i + 1} {name}: {shown} (us CPU/request)", flush=True)
        finally:
            for worker in workers.values():
                worker.stop()
    names = list(trees)
    print("median us CPU per request (in-process):")
    for probe in times[names[0]]:
        medians = [statistics.median(times[n][probe]) for n in names]
        pairs = ", ".join(f"{n} {m:.1f}" for n, m in zip(names, medians, strict=True))
        print(f"  {probe}: {pairs}; {names[0]}/{names[1]} {medians[0] / medians[1]:.3f}")


def _servers(trees: dict[str, Path], *, rounds: int, seconds: float, connections: int) -> None:
    sys.path.insert(0, str(HERE))
    from bench.loadgen import run
    from tests.server import EngramServer
    from tests.system.raw_http import build_request

    health = build_request("GET", "/health")
    tick_s = 1 / os.sysconf("SC_CLK_TCK")

    def cpu_s(server: EngramServer) -> float:
        assert server.proc is not None
        stat = Path(f"/proc/{server.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(stat[11]) + int(stat[12])) * tick_s

    async def load(server: EngramServer) -> tuple[float, float]:
        before = cpu_s(server)
        result = await run(server.port, lambda _: health, connections=connections, seconds=seconds)
        if result.errors or result.ok != len(result.latencies):
            raise RuntimeError(f"failed requests: {result.errors} errors, {result.statuses}")
        return result.rate, (cpu_s(server) - before) / len(result.latencies) * 1e6

    with tempfile.TemporaryDirectory() as tmp:
        servers = {}
        for name, tree in trees.items():
            server = EngramServer(
                Path(tmp) / name,
                tree=tree,
                ENGRAM_LEARNING__WORKER="false",
                ENGRAM_LOG_REQUESTS="false",
            )
            servers[name] = server.start()
        try:
            rates: dict[str, list[float]] = {n: [] for n in trees}
            cpu: dict[str, list[float]] = {n: [] for n in trees}
            for server in servers.values():
                asyncio.run(load(server))
            for i in range(rounds):
                for name in sorted(trees, reverse=i % 2 == 1):
                    rate, per = asyncio.run(load(servers[name]))
                    rates[name].append(rate)
                    cpu[name].append(per)
                    print(f"round {i + 1} {name}: {rate:,.0f} req/s, {per:.0f} us CPU/req")
        finally:
            for server in servers.values():
                server.stop()
    for name in trees:
        print(
            f"server GET /health, {name} (median): {statistics.median(rates[name]):,.0f} req/s, "
            f"{statistics.median(cpu[name]):.1f} us CPU/request"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--other", type=Path, help="the checkout to compare with")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--requests", type=int, default=4000, help="per probe and round")
    parser.add_argument(
        "--fast-routes", action="store_true", help="also POST /v1/memories, episodes, recall"
    )
    parser.add_argument("--server", action="store_true", help="also load the real servers")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--tmp", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        asyncio.run(_serve_rounds(args.worker, args.tmp, fast_routes=args.fast_routes))
        return
    if args.other is None:
        parser.error("--other: a checkout to compare with")
    trees = {"this": HERE, "other": args.other.resolve()}
    _in_process(trees, rounds=args.rounds, requests=args.requests, fast_routes=args.fast_routes)
    if args.server:
        _servers(trees, rounds=args.rounds, seconds=args.seconds, connections=args.connections)


if __name__ == "__main__":
    main()
