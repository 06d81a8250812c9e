"""The compose profiles' processes outside Docker: each service's command and environment
taken from docker-compose.yml (the test database in place of the service's), run through
docker/entrypoint.sh on loopback ports, with Caddy and docker/Caddyfile in front of the
postgres profile's replicas. Each profile runs on its own database kind."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest

from app.core.config import Settings
from tests import compose
from tests.compose import API_KEY, ENTRYPOINT, ROOT
from tests.conftest import DB_KIND, episode_body
from tests.server import free_port

BIN = Path(sys.executable).parent
AUTH = {"Authorization": f"Bearer {API_KEY}"}


def service_env(name: str, settings: Settings, **extra: str) -> dict[str, str]:
    """What the container of service `name` is given (the image's variables, then
    compose's), on this machine: the test database, a loopback address."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "TURSO_"))},
        **compose.image_env(),
        **compose.environment(name),
        "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
        "ENGRAM_DATABASE_URL": settings.database_url,
        "ENGRAM_BLOB_DIR": str(settings.blob_dir),
        "ENGRAM_HOST": "127.0.0.1",
        "ENGRAM_LOG_REQUESTS": "false",
        **extra,
    }


@contextlib.contextmanager
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The processes a test starts, each stopped (SIGTERM) at the end if still running."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        yield started
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in started:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def start(
    argv: Sequence[str], env: dict[str, str], log: Path, started: list[subprocess.Popen[bytes]]
) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        proc = subprocess.Popen(list(argv), env=env, stdout=out, stderr=subprocess.STDOUT)
    started.append(proc)
    return proc


def wait_health(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()[-3000:]
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        time.sleep(0.1)
    raise AssertionError(f"{url} did not answer: {log.read_text()[-3000:]}")


def posts_answered(url: str) -> int:
    """The episodes a replica stored (its own request metrics)."""
    metrics = httpx.get(f"{url}/metrics", headers=AUTH, timeout=10).text
    found = re.search(
        r'^engram_http_requests_total\{method="POST",route="/v1/episodes",status="201"\} (\S+)$',
        metrics,
        flags=re.MULTILINE,
    )
    return int(float(found[1])) if found else 0


def wait_learned(url: str, ids: list[str]) -> None:
    deadline = time.monotonic() + 60
    pending = set(ids)
    while pending and time.monotonic() < deadline:
        for eid in sorted(pending):
            found = httpx.get(f"{url}/v1/reflections", params={"episode_id": eid}, headers=AUTH)
            if found.json()["items"]:
                pending.discard(eid)
        time.sleep(0.2)
    assert not pending, f"not learned: {sorted(pending)}"


@pytest.mark.skipif(DB_KIND != "postgresql", reason="the postgres profile's database")
def test_the_postgres_profile_outside_docker(settings: Settings, tmp_path: Path) -> None:
    # The one-shot `migrate` service, before the others.
    migrate = subprocess.run(
        ["sh", str(ENTRYPOINT), *compose.command("migrate")],
        env=service_env("migrate", settings),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrate.returncode == 0, migrate.stderr
    assert migrate.stdout.strip() == "migrations applied"

    ports = {name: free_port() for name in ("api-1", "api-2")}
    urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    logs = {name: tmp_path / f"{name}.log" for name in (*ports, "proxy", "worker")}
    with processes() as started:
        replicas = {
            # One payload directory for both (settings.blob_dir): LevelDB would refuse the
            # second process; payloads in SQL leave it alone.
            name: start(
                ["sh", str(ENTRYPOINT), *compose.command(name)],
                service_env(name, settings, ENGRAM_PORT=str(port)),
                logs[name],
                started,
            )
            for name, port in ports.items()
        }
        for name, proc in replicas.items():
            wait_health(urls[name], proc, logs[name])

        # Caddy with the repository's Caddyfile, the replicas' names put on their ports.
        caddyfile = (ROOT / "docker" / "Caddyfile").read_text()
        site, upstreams, _ = compose.caddy_upstreams(caddyfile)
        assert sorted(upstreams) == [f"{name}:8080" for name in sorted(ports)]
        proxy_port = free_port()
        for name, port in ports.items():
            caddyfile = caddyfile.replace(f"{name}:8080", f"127.0.0.1:{port}")
        caddyfile = caddyfile.replace(f"\n{site} {{", f"\n:{proxy_port} {{", 1)
        config = tmp_path / "Caddyfile"
        config.write_text("{\n\tadmin off\n}\n" + caddyfile)
        home = {
            "HOME": str(tmp_path),
            "XDG_DATA_HOME": str(tmp_path / "data"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
        }
        proxy = start(
            [str(BIN / "caddy"), "run", "--config", str(config), "--adapter", "caddyfile"],
            {"PATH": os.environ.get("PATH", ""), **home},
            logs["proxy"],
            started,
        )
        url = f"http://127.0.0.1:{proxy_port}"
        wait_health(url, proxy, logs["proxy"])

        # Round robin: each replica stores some of the episodes sent to the proxy.
        ids = []
        for i in range(6):
            r = httpx.post(f"{url}/v1/episodes", json=episode_body(f"t{i}"), headers=AUTH)
            assert r.status_code == 201, r.text
            ids.append(r.json()["id"])
        answered = {name: posts_answered(u) for name, u in urls.items()}
        assert sum(answered.values()) == 6
        assert all(answered.values()), answered
        # Payloads in the database: each replica reads every episode whole.
        for eid in ids:
            for u in urls.values():
                episode = httpx.get(f"{u}/v1/episodes/{eid}", headers=AUTH).json()
                assert [s["action"] for s in episode["steps"]] == ["step_0", "step_1", "step_2"]

        # Engram judges the Host the client sent, which the proxy passes on.
        refused = httpx.get(f"{url}/health", headers={"Host": "evil.example"})
        assert refused.status_code == 400
        assert refused.json()["error"] == "UntrustedHost"
        assert httpx.get(f"{url}/health", headers={"Host": "proxy"}).status_code == 200

        # The replicas do not learn; the one worker does.
        assert httpx.get(f"{url}/v1/jobs", headers=AUTH).json()["counts"] == {"queued": 6}
        worker = start(
            ["sh", str(ENTRYPOINT), *compose.command("worker")],
            service_env("worker", settings),
            logs["worker"],
            started,
        )
        wait_learned(url, ids)
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0

        # The proxy's checks of /health (Host: localhost) passed all along.
        assert "health_checker" not in logs["proxy"].read_text()
        # A replica stops: the proxy sends its requests to the other.
        replicas["api-1"].send_signal(signal.SIGTERM)
        replicas["api-1"].wait(timeout=30)
        for _ in range(4):
            assert httpx.get(f"{url}/v1/episodes", headers=AUTH, timeout=10).status_code == 200

    # Migrated once, by `migrate`: neither the replicas nor the worker ran Alembic.
    for name in (*ports, "worker"):
        output = logs[name].read_text()
        assert "migrations applied" not in output, name
        assert "alembic.runtime.migration" not in output, name


@pytest.mark.skipif(DB_KIND != "libsql", reason="the turso profile's database")
def test_the_turso_profile_outside_docker(settings: Settings, tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "engram-turso.log"
    with processes() as started:
        proc = start(
            ["sh", str(ENTRYPOINT), *compose.command("engram-turso")],
            service_env("engram-turso", settings, ENGRAM_PORT=str(port)),
            log,
            started,
        )
        wait_health(url, proc, log)
        r = httpx.post(f"{url}/v1/episodes", json=episode_body("t1"), headers=AUTH)
        assert r.status_code == 201, r.text
        episode = httpx.get(f"{url}/v1/episodes/{r.json()['id']}", headers=AUTH).json()
        assert [s["action"] for s in episode["steps"]] == ["step_0", "step_1", "step_2"]
        # Learned by the worker inside the service.
        wait_learned(url, [r.json()["id"]])
        assert httpx.get(f"{url}/health", headers={"Host": "engram-turso"}).status_code == 200
    assert "migrations applied" in log.read_text()
