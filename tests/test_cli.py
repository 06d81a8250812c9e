"""The `engram` command and the container entrypoint, run as real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from app.core.config import Settings
from tests.server import free_port

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def env_for(settings: Settings, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
        "ENGRAM_DATABASE_URL": settings.database_url,
        "ENGRAM_BLOB_DIR": str(settings.blob_dir),
        "ENGRAM_LOG_REQUESTS": "false",
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
        r = httpx.post(f"{url}/v1/episodes", json={"task_id": "t", "action": "a"})
        assert r.status_code == 201
    finally:
        proc.send_signal(signal.SIGTERM)
        # uvicorn re-raises the signal after a graceful shutdown.
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
    output = proc.communicate(timeout=10)[0].decode()
    assert "migrations applied" in output
    assert "Application shutdown complete" in output


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
