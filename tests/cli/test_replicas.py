"""`engram serve --workers N`: refused in one line where several processes cannot share the
stores; on PostgreSQL with payloads in SQL, N processes serve one port, migrations run
once, and SIGTERM stops them all."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from app.core.config import Settings
from tests.cli.test_commands import ROOT, engram, env_for, one_line_error, wait_health
from tests.conftest import ON_POSTGRES, episode_body
from tests.server import free_port


def test_several_processes_are_refused_with_leveldb_payloads(settings: Settings) -> None:
    line = one_line_error(engram(settings, "serve", "--workers", "2"))
    assert "ENGRAM_BLOB_STORE=sql" in line, line


def test_several_processes_are_refused_on_a_sqlite_file(settings: Settings, tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'one.db'}"
    r = engram(
        settings, "serve", "--workers", "2", ENGRAM_DATABASE_URL=url, ENGRAM_BLOB_STORE="sql"
    )
    line = one_line_error(r)
    assert "SQLite file" in line, line
    assert not (tmp_path / "one.db").exists()  # refused before migrating anything


def children(pid: int) -> list[int]:
    """The processes of the supervisor `pid` that serve the API (spawned)."""
    found = []
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        if b"spawn_main" in cmdline:
            found.append(int(child))
    return found


@pytest.mark.skipif(not ON_POSTGRES, reason="several API processes share PostgreSQL")
def test_several_processes_serve_one_port_and_stop_together(settings: Settings) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--workers", "2", "--port", str(port)],
        env=env_for(settings, ENGRAM_BLOB_STORE="sql"),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_health(url, proc)
        with httpx.Client(base_url=url, timeout=30) as http:
            # New connections go to either process; every write is read back.
            for i in range(20):
                r = http.post(
                    "/v1/episodes", json=episode_body(f"t{i}"), headers={"Connection": "close"}
                )
                assert r.status_code == 201, r.text
            listed = http.get("/v1/episodes", params={"limit": 50}).json()["items"]
            assert len(listed) == 20
        served_by = children(proc.pid)
        assert len(served_by) == 2, served_by
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    output = proc.communicate(timeout=10)[0].decode()
    assert code == 0, output
    assert not [pid for pid in served_by if Path(f"/proc/{pid}").exists()]
    # Migrated once, by the command; each process shut down its app (its worker included).
    assert output.count('"msg":"Context impl') == 1, output
    assert output.count("Application shutdown complete") == 2, output
