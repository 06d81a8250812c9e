"""The `engram` command and the container entrypoint, run as real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import httpx
import pytest

from app.core.config import Settings
from app.main import create_app
from tests.conftest import episode_body, running
from tests.server import free_port

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def env_for(settings: Settings, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
        "ENGRAM_DATABASE_URL": settings.database_url,
        "ENGRAM_BLOB_DIR": str(settings.blob_dir),
        "ENGRAM_LOG_REQUESTS": "false",
        # BM25 only, as the settings fixture: the model would load in every process and
        # embed what each test writes (tests/embeddings/test_startup.py starts one with it).
        "ENGRAM_EMBEDDINGS__PROVIDER": settings.embeddings.provider,
        **extra,
    }


def engram(settings: Settings, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        env=env_for(settings, **extra),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


def wait_health(url: str, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "server exited"
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise AssertionError("server did not start")


def test_migrate_and_keys(settings: Settings) -> None:
    r = engram(settings, "migrate")
    assert r.returncode == 0, r.stderr
    created = engram(settings, "keys", "create", "--namespace", "team-a", "--role", "admin")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert key.startswith("egk_")
    assert len(key) > 40
    listed = engram(settings, "keys", "list")
    assert "team-a" in listed.stdout
    assert "admin" in listed.stdout
    assert key not in listed.stdout
    key_id = created.stderr.split("id:", 1)[1].split()[0]
    assert engram(settings, "keys", "revoke", key_id).returncode == 0
    assert "revoked" in engram(settings, "keys", "list").stdout
    assert engram(settings, "keys", "revoke", key_id).returncode == 1


async def test_a_first_key_of_another_namespace_says_where_open_mode_wrote(
    settings: Settings,
) -> None:
    # No worker: a reflection learned from the episode before the app stops would be a
    # second memory, sometimes.
    settings.learning.worker = False
    async with running(create_app(settings)) as client:  # open mode: namespace default
        assert (await client.post("/v1/episodes", json=episode_body())).status_code == 201
        body = {"type": "fact", "content": "the staging DB is db-2"}
        assert (await client.post("/v1/memories", json=body)).status_code == 201
    created = engram(settings, "keys", "create", "--namespace", "team-a")
    assert created.returncode == 0, created.stderr
    assert "open mode has ended" in created.stderr
    assert "the 1 memories and 1 episodes written without a key are in namespace `default`" in (
        created.stderr
    )
    assert "--namespace default" in created.stderr
    # A key of default itself, or a second key, has nothing more to say.
    again = engram(settings, "keys", "create", "--namespace", "default")
    assert "open mode" not in again.stderr
    assert "Note:" not in again.stderr


def test_keys_create_rejects_bad_input(settings: Settings) -> None:
    r = engram(settings, "keys", "create", "--namespace", "bad/ns")
    assert r.returncode == 2
    assert "namespace" in r.stderr
    r = engram(settings, "keys", "create", "--namespace", "ok", "--role", "root")
    assert r.returncode == 2
    assert "role" in r.stderr


def test_serve_refuses_public_address_without_keys(settings: Settings) -> None:
    r = engram(settings, "serve", "--host", "0.0.0.0", "--port", str(free_port()))
    assert r.returncode != 0
    assert "ENGRAM_PROTECTED_MODE" in r.stderr


def test_serve_on_public_address_with_a_key(settings: Settings) -> None:
    key = engram(settings, "keys", "create", "--namespace", "n1", "--role", "agent").stdout.strip()
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--host", "0.0.0.0", "--port", str(port)],
        env=env_for(settings),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_health(url, proc)
        assert httpx.get(f"{url}/v1/episodes").status_code == 401
        r = httpx.post(
            f"{url}/v1/episodes",
            json={"task_id": "t", "action": "a"},
            headers={"Authorization": f"Bearer {key}"},
        )
        assert r.status_code == 201
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)


@pytest.mark.parametrize("args", [[], ["serve"]])
def test_docker_entrypoint_migrates_and_serves(settings: Settings, args: list[str]) -> None:
    port = free_port()
    proc = subprocess.Popen(
        ["sh", str(ROOT / "docker" / "entrypoint.sh"), *args],
        env=env_for(settings, ENGRAM_HOST="127.0.0.1", ENGRAM_PORT=str(port)),
        cwd=settings.blob_dir.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_health(url, proc)
        assert httpx.get(f"{url}/ready").json()["stores"] == {"sql": "ok", "blobs": "ok"}
        head = httpx.head(f"{url}/health")
        assert head.status_code == 200
        assert head.content == b""
        r = httpx.post(f"{url}/v1/episodes", json={"task_id": "t", "action": "a"})
        assert r.status_code == 201
    finally:
        proc.send_signal(signal.SIGTERM)
        # uvicorn re-raises the signal after a graceful shutdown.
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
    output = proc.communicate(timeout=10)[0].decode()
    # Migrated once, by the entrypoint's `engram migrate`; `serve` did not migrate again
    # (Alembic logs its context each time it runs).
    assert output.count("migrations applied") == 1
    assert "alembic.runtime.migration" not in output
    assert "Application shutdown complete" in output


def test_serve_migrates_once(settings: Settings) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
        env=env_for(settings),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_health(f"http://127.0.0.1:{port}", proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
    output = proc.communicate(timeout=10)[0].decode()
    assert output.count('"msg":"Context impl') == 1, output


def test_docker_entrypoint_runs_other_commands(settings: Settings) -> None:
    r = subprocess.run(
        ["sh", str(ROOT / "docker" / "entrypoint.sh"), "keys", "create", "--namespace", "d"],
        env=env_for(settings),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().startswith("egk_")


def test_worker_runs_as_its_own_process(settings: Settings) -> None:
    """`engram serve` with its worker off only stores; `engram worker` learns."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = env_for(settings, ENGRAM_PORT=str(port), ENGRAM_LEARNING__WORKER="false")
    server = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_health(url, server)
        steps = [{"tool": "git", "action": "clone"}, {"tool": "pytest", "action": "run"}]
        ids = []
        for i in range(3):
            body = {"task_id": f"w{i}", "task_type": "ci", "steps": steps, "outcome": "success"}
            ids.append(httpx.post(f"{url}/v1/episodes", json=body).json()["id"])
        jobs = httpx.get(f"{url}/v1/jobs").json()
        assert jobs["counts"] == {"queued": 3}

        once = engram(settings, "worker", "--once")
        assert once.returncode == 0, once.stderr
        assert once.stdout.strip() == "4 jobs run"  # 3 episodes learned, 1 evolution pass
        for eid in ids:
            found = httpx.get(f"{url}/v1/reflections", params={"episode_id": eid}).json()
            assert len(found["items"]) == 1

        # The long-running form stops cleanly on SIGTERM.
        worker = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "worker"],
            env=env_for(settings),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        body = {"task_id": "w9", "task_type": "ci", "steps": steps, "outcome": "success"}
        late = httpx.post(f"{url}/v1/episodes", json=body).json()["id"]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = httpx.get(f"{url}/v1/reflections", params={"episode_id": late}).json()
            if found["items"]:
                break
            time.sleep(0.1)
        assert found["items"]
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def one_line_error(r: subprocess.CompletedProcess[str]) -> str:
    """The single line a failed command printed (exit code 2, no traceback)."""
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("engram: ")
    return lines[0]


def test_version(settings: Settings) -> None:
    r = engram(settings, "--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"engram {metadata.version('engram')}\n"


SERVE = ("serve", "--port", "0")


@pytest.mark.parametrize(
    ("url", "says", "commands"),
    [
        (
            "libsql://127.0.0.1:9?tls=0",
            "libSQL server unreachable",
            [SERVE, ("worker",)],
        ),
        ("sqlite:///engram.db", "use sqlite+aiosqlite:///engram.db", [SERVE, ("migrate",)]),
        (
            "mysql://engram@127.0.0.1/engram",
            "'mysql' databases are not supported",
            [SERVE, ("keys", "list")],
        ),
        (
            "postgresql+asyncpg://postgres@127.0.0.1:1/x",
            "cannot connect to the database",
            [SERVE, ("migrate",), ("worker",), ("keys", "list")],
        ),
    ],
)
def test_an_unusable_database_is_one_line(
    settings: Settings, url: str, says: str, commands: list[tuple[str, ...]]
) -> None:
    db = settings.model_copy(update={"database_url": url})
    for command in commands:
        line = one_line_error(engram(db, *command))
        assert says in line, (command, line)
        assert "ENGRAM_DATABASE_URL" in line


def test_migrate_waits_only_for_an_unreachable_database(settings: Settings) -> None:
    unreachable = settings.model_copy(
        update={"database_url": "postgresql+asyncpg://postgres@127.0.0.1:1/x"}
    )
    start = time.monotonic()
    r = engram(unreachable, "migrate", "--wait", "1.5")
    assert time.monotonic() - start >= 1.5
    assert r.returncode == 2
    waiting, failed = r.stderr.splitlines()
    assert waiting.startswith("engram: waiting up to 1.5 s for the database")
    assert failed.startswith("engram: cannot connect to the database")

    wrong = settings.model_copy(update={"database_url": "mysql://engram@127.0.0.1/engram"})
    start = time.monotonic()
    one_line_error(engram(wrong, "migrate", "--wait", "30"))
    assert time.monotonic() - start < 15


@pytest.mark.parametrize("key", ["", "egk_too-short"])
def test_serve_refuses_an_empty_or_short_bootstrap_key(settings: Settings, key: str) -> None:
    r = engram(settings, "serve", "--port", str(free_port()), ENGRAM_BOOTSTRAP_KEY=key)
    line = one_line_error(r)
    assert "ENGRAM_BOOTSTRAP_KEY" in line
    assert "32+ characters" in line
    if key:
        assert key not in line


def test_a_second_serve_on_the_same_data_dir_is_one_line(settings: Settings) -> None:
    port = free_port()
    first = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
        env=env_for(settings),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_health(f"http://127.0.0.1:{port}", first)
        line = one_line_error(engram(settings, "serve", "--port", str(free_port())))
        assert "is in use by another Engram process" in line
        assert "ENGRAM_BLOB_DIR" in line
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=30) in (0, -signal.SIGTERM)
