"""Who holds a job. Each worker has an id ("host:pid:random"); a claim records it, the
worker's heartbeat renews the leases of the jobs it holds while it runs them, and only the
holder may finish or fail a job (app/repositories/jobs.py `owned`). A worker that dies
loses its jobs when their lease passes; a worker of this host known to be gone loses them
as soon as another worker starts (`gone`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from collections.abc import AsyncIterator, Awaitable, Callable

from app.core.tasks import cancel_and_wait

log = logging.getLogger("engram.worker")

HOST = socket.gethostname()
# The ids of this process's workers that have not stopped.
_LIVE: set[str] = set()


def new_worker_id() -> str:
    worker_id = f"{HOST}:{os.getpid()}:{secrets.token_hex(4)}"
    _LIVE.add(worker_id)
    return worker_id


def stopped(worker_id: str) -> None:
    _LIVE.discard(worker_id)


def _process_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def gone(worker_id: str | None) -> bool:
    """Whether the worker that claimed a job is known to have stopped, so that its jobs may
    be queued again at once rather than when their lease passes: a process of this host
    that no longer runs, or one with this process's pid that is none of its workers (the
    process before a restart that reused the pid, as a container's entrypoint does).
    Jobs claimed before jobs had owners (None) count as gone: no worker can finish them.

    Only a hint: a worker of another host with the same name (containers given one
    hostname) may look gone while it runs. Its job is then claimed again, but is still
    applied once: the first holder finds it is no longer its own and leaves it."""
    if worker_id is None:
        return True
    parts = worker_id.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != HOST or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return worker_id not in _LIVE
    return not _process_runs(pid)


@contextlib.asynccontextmanager
async def heartbeat(
    renew: Callable[[], Awaitable[object]], interval_s: float
) -> AsyncIterator[None]:
    """Call `renew` every `interval_s` while the block runs; a renewal that fails is
    logged and the next one tries again (the lease allows for a few missed)."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                await renew()
            except Exception:
                log.warning("job lease renewal failed", exc_info=True)

    task = asyncio.create_task(beat(), name="engram-worker-heartbeat")
    try:
        yield
    finally:
        await cancel_and_wait(task)
