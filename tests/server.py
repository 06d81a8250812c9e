"""Run the real `engram serve` as a subprocess on a free loopback port (tests and bench)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
from sqlalchemy import text

from app.core.config import Settings
from app.db.backends import create_engine
from app.db.migrate import migrate
from app.models import Base


async def reset_database(url: str) -> None:
    """Migrate the server database at `url`, then empty every table, so a run starts from
    nothing."""
    engine = create_engine(Settings(database_url=url))
    try:
        await migrate(engine)
        async with engine.begin() as conn:
            names = [t.name for t in Base.metadata.sorted_tables]
            if conn.dialect.name == "postgresql":
                await conn.execute(text(f"TRUNCATE {', '.join(names)} CASCADE"))
                return
            # libSQL: the full-text table and its log are kept by triggers, not by the models.
            for name in [*reversed(names), "memories_fts", "memories_fts_deletions"]:
                await conn.execute(text(f"DELETE FROM {name}"))
    finally:
        await engine.dispose()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class _Process:
    """An engram subprocess writing to `log_path`: its log's tail, a crash, a stop."""

    log_path: Path
    proc: subprocess.Popen[bytes] | None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def kill(self) -> None:
        """SIGKILL: no shutdown hooks run, as in a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self, *, timeout: float = 30.0) -> int:
        """SIGTERM, then its exit code."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


class EngramServer(_Process):
    def __init__(
        self,
        data_dir: Path,
        *,
        database_url: str | None = None,
        tree: Path | None = None,
        args: Sequence[str] = (),
        **env: str,
    ) -> None:
        """`env` adds ENGRAM_* settings; the rest are the defaults an operator gets. The
        server runs the code of `tree` (a checkout; this one by default), with `args` after
        `engram serve`."""
        self.data_dir = data_dir
        self.args = list(args)
        self.tree = tree or Path(__file__).resolve().parent.parent
        self.port = free_port()
        self.env = {
            **os.environ,
            "ENGRAM_DATABASE_URL": database_url or f"sqlite+aiosqlite:///{data_dir}/engram.db",
            "ENGRAM_BLOB_DIR": str(data_dir / "blobs"),
            "ENGRAM_HOST": "127.0.0.1",
            "ENGRAM_PORT": str(self.port),
            # Lexical search unless a test asks for an embedder: the model would embed every
            # memory a test writes, on the cores the other tests share.
            "ENGRAM_EMBEDDINGS__PROVIDER": "none",
            **env,
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir / "server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, *, timeout: float = 60.0) -> EngramServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:  # the child keeps its own copy of the fd
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "app.cli", "serve", *self.args],
                env=self.env,
                stdout=log,
                stderr=log,
                cwd=self.tree,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"engram exited with {self.proc.returncode}: {self.log()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"engram did not start: {self.log()}")

    def rss_bytes(self) -> int:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0


class EngramWorker(_Process):
    """The real `engram worker` as a subprocess on the database at `database_url`."""

    def __init__(self, log_path: Path, *, database_url: str, **env: str) -> None:
        """`env` adds ENGRAM_* settings."""
        self.log_path = log_path
        self.env = {**os.environ, "ENGRAM_DATABASE_URL": database_url, **env}
        self.proc: subprocess.Popen[bytes] | None = None
        self.id = ""

    def start(self, *, timeout: float = 30.0) -> EngramWorker:
        """Start it and wait until it runs; `id` is then its worker id."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "app.cli", "worker"],
                env=self.env,
                stdout=log,
                stderr=log,
                cwd=Path(__file__).resolve().parent.parent,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.log_path.read_text(errors="replace").splitlines():
                if '"worker started"' in line:
                    self.id = json.loads(line)["worker"]
                    return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"engram worker exited with {self.proc.returncode}")
            time.sleep(0.05)
        raise RuntimeError(f"engram worker did not start: {self.log()}")


@contextlib.contextmanager
def serving(data_dir: Path, *, key: str, **env: str) -> Iterator[EngramServer]:
    """A started `engram serve` on a SQLite file in `data_dir`, `key` its operator key, its
    request log off and no rate limit (tests call faster than a key may); stopped after."""
    server = EngramServer(
        data_dir,
        ENGRAM_BOOTSTRAP_KEY=key,
        ENGRAM_LOG_REQUESTS="false",
        ENGRAM_RATE_LIMIT__PER_SECOND="0",
        **env,
    ).start()
    try:
        yield server
    finally:
        server.stop()
