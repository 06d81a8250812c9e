"""A small HTTP/1.1 keep-alive load generator (asyncio streams), so the client costs
little CPU next to the server it measures on the same machine. Its requests are bytes
made by tests/system/raw_http.py's build_request."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.system.raw_http import read_response


@dataclass
class Result:
    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    bodies: list[bytes] = field(default_factory=list)
    errors: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> int:
        return sum(n for s, n in self.statuses.items() if 200 <= s < 300)

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def pct(self, p: float) -> float:
        if not self.latencies:
            return float("nan")
        data = sorted(self.latencies)
        return data[min(len(data) - 1, int(p / 100 * len(data)))] * 1000


async def run(
    port: int,
    make_request: Callable[[int], bytes],
    *,
    connections: int,
    seconds: float | None = None,
    total: int | None = None,
    keep_bodies: bool = False,
) -> Result:
    """Drive `connections` clients until `seconds` pass or `total` requests are sent."""
    result = Result()
    counter = 0
    deadline = time.perf_counter() + seconds if seconds else None

    async def client() -> None:
        nonlocal counter
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while True:
                if deadline is not None and time.perf_counter() >= deadline:
                    return
                if total is not None and counter >= total:
                    return
                i = counter
                counter += 1
                request = make_request(i)
                started = time.perf_counter()
                writer.write(request)
                try:
                    status, body = await read_response(reader)
                except (asyncio.IncompleteReadError, ConnectionError):
                    result.errors += 1
                    return
                result.latencies.append(time.perf_counter() - started)
                result.statuses[status] = result.statuses.get(status, 0) + 1
                if keep_bodies:
                    result.bodies.append(body)
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(connections)), return_exceptions=False)
    result.seconds = time.perf_counter() - started
    return result
