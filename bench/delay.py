"""A TCP relay on loopback that adds a network's latency: every chunk is passed on half the
round trip after it arrived, in each direction, without holding up the chunks behind it
(a link's delay, not its bandwidth). `tc netem` needs a kernel module these machines do
not have.

    python -m bench.delay --port 0 --to 127.0.0.1:8080 --rtt-ms 25

prints the port it listens on, then relays until killed. `DelayProxy` runs one as a child
process (its own event loop and core, apart from the load generator's).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def forward() -> None:
        while True:
            due, data = await queue.get()
            if not data:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    sender = asyncio.create_task(forward())
    try:
        while data := await reader.read(65536):
            queue.put_nowait((time.monotonic() + delay, data))
    except ConnectionError:
        pass
    queue.put_nowait((time.monotonic() + delay, b""))
    try:
        await sender
    except ConnectionError:
        pass


async def serve(port: int, host: str, target_port: int, rtt_ms: float) -> None:
    delay = rtt_ms / 2000.0

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(host, target_port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer, delay), _pipe(up_reader, writer, delay))

    server = await asyncio.start_server(relay, "127.0.0.1", port)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


class DelayProxy:
    """`python -m bench.delay` as a child process: `.port` relays to `target` with `rtt_ms`."""

    def __init__(self, target: tuple[str, int], rtt_ms: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.delay", "--port", "0", "--to",
             f"{target[0]}:{target[1]}", "--rtt-ms", str(rtt_ms)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--to", required=True, help="HOST:PORT")
    parser.add_argument("--rtt-ms", type=float, required=True)
    args = parser.parse_args()
    host, port = args.to.rsplit(":", 1)
    asyncio.run(serve(args.port, host, int(port), args.rtt_ms))


if __name__ == "__main__":
    main()
