"""`engram import claude-code|codex` against a real `engram serve`.

Past sessions read from transcripts become episodes, once; a file that cannot be read is
reported while the others are still imported."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import auth
from tests.server import EngramServer, free_port, serving

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "agents"
OPERATOR = "egk_import-cli-test-operator-key-0123456789abcdef"
CLAUDE_SESSION = "5a7e1c2d-3b4f-4e6a-8c9d-0e1f2a3b4c5d"
CODEX_SESSIONS = ("0199e2a4-6c1b-7d30-9a8e-5f4b3c2d1e0f", "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a98")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngramServer]:
    with serving(tmp_path_factory.mktemp("import-cli"), key=OPERATOR) as srv:
        yield srv


def _key(server: EngramServer) -> str:
    namespace = f"import-cli-{uuid.uuid4().hex[:12]}"
    r = httpx.post(
        f"{server.url}/v1/keys",
        json={"namespace": namespace, "role": "agent"},
        headers=auth(OPERATOR),
    )
    assert r.status_code == 201, r.text
    key: str = r.json()["key"]
    return key


def engram_import(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ENGRAM_URL", "ENGRAM_KEY", "CODEX_HOME", "HOME")
    }
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "import", *args],
        env={**environ, "HOME": str(home), **env},
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def _episodes(server: EngramServer, key: str, task_id: str) -> list[dict[str, Any]]:
    r = httpx.get(
        f"{server.url}/v1/episodes", params={"task_id": task_id, "limit": 100}, headers=auth(key)
    )
    assert r.status_code == 200, r.text
    items: list[dict[str, Any]] = r.json()["items"]
    return items


def test_claude_code_sessions_are_imported_once(server: EngramServer, tmp_path: Path) -> None:
    key = _key(server)
    projects = tmp_path / "home" / ".claude" / "projects"
    shutil.copytree(FIXTURES / "claude-code", projects)
    target = ("--url", server.url, "--key", key)

    # No PATH: the sessions under ~/.claude/projects.
    first = engram_import(tmp_path / "home", "claude-code", *target)
    assert first.returncode == 0, first.stderr
    assert "1 session imported, 0 already there, 0 failed" in first.stdout
    # Piped, not a terminal: a plain line per session.
    assert f"imported {CLAUDE_SESSION}: 3 episodes" in first.stdout

    episodes = _episodes(server, key, f"claude-code:{CLAUDE_SESSION}")
    assert len(episodes) == 3
    steps = sum(e["step_count"] for e in episodes)
    assert f"3 episodes and {steps} steps added" in first.stdout
    assert steps >= 9
    assert all(e["status"] == "completed" for e in episodes)

    # The same sessions again (as a file this time): nothing new.
    path = projects / "-home-dev-shop" / f"{CLAUDE_SESSION}.jsonl"
    second = engram_import(tmp_path / "home", "claude-code", str(path), *target)
    assert second.returncode == 0, second.stderr
    assert "0 sessions imported, 1 already there, 0 failed" in second.stdout
    assert "0 episodes and 0 steps added" in second.stdout
    assert len(_episodes(server, key, f"claude-code:{CLAUDE_SESSION}")) == 3


def test_a_broken_file_is_reported_and_the_others_imported(
    server: EngramServer, tmp_path: Path
) -> None:
    key = _key(server)
    sessions = tmp_path / "sessions"
    shutil.copytree(FIXTURES / "codex", sessions)
    # A rollout that cannot be read: a link to a file gone.
    broken = sessions / "2025" / "rollout-2025-06-01T00-00-00-broken.jsonl"
    broken.symlink_to(tmp_path / "deleted.jsonl")
    missing = tmp_path / "nowhere"

    result = engram_import(
        tmp_path / "home", "codex", str(sessions), str(missing), "--url", server.url, "--key", key
    )
    assert result.returncode == 1
    assert "2 sessions imported, 0 already there, 2 failed" in result.stdout
    assert "rollout-2025-06-01T00-00-00-broken.jsonl: cannot read it" in result.stderr
    assert f"{missing}: no such file or directory" in result.stderr
    for session_id in CODEX_SESSIONS:
        assert _episodes(server, key, f"codex:{session_id}")


def test_codex_sessions_under_codex_home(server: EngramServer, tmp_path: Path) -> None:
    key = _key(server)
    codex_home = tmp_path / "codex"
    shutil.copytree(FIXTURES / "codex", codex_home / "sessions")
    result = engram_import(
        tmp_path / "home",
        "codex",
        "--url",
        server.url,
        CODEX_HOME=str(codex_home),
        ENGRAM_KEY=key,
    )
    assert result.returncode == 0, result.stderr
    assert "2 sessions imported" in result.stdout
    [old] = _episodes(server, key, f"codex:{CODEX_SESSIONS[1]}")
    assert old["step_count"] == 2


def test_no_server_or_a_refused_key_stops_the_import(server: EngramServer, tmp_path: Path) -> None:
    path = str(FIXTURES / "claude-code")
    closed = engram_import(
        tmp_path, "claude-code", path, "--url", f"http://127.0.0.1:{free_port()}", "--key", "k"
    )
    assert closed.returncode == 1
    assert "cannot reach Engram" in closed.stderr
    refused = engram_import(
        tmp_path, "claude-code", path, "--url", server.url, "--key", "egk_" + "0" * 43
    )
    assert refused.returncode == 1
    assert "401" in refused.stderr


def test_a_session_over_the_body_limit_is_sent_with_its_fields_cut(tmp_path: Path) -> None:
    entries = [{"type": "user", "sessionId": "big", "message": {"content": "Read the logs"}}]
    for n in range(4):
        block = {"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {"n": n}}
        entries.append({"type": "assistant", "message": {"content": [block]}})
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": f"{n}" * 30_000}
        entries.append({"type": "user", "message": {"content": [result]}})
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    limits = {"ENGRAM_LIMITS__MAX_BODY_BYTES": "40000"}
    with serving(tmp_path / "small", key=OPERATOR, **limits) as small:
        key = _key(small)
        result = engram_import(tmp_path, "claude-code", str(path), "--url", small.url, "--key", key)
        assert result.returncode == 0, result.stderr
        assert "1 session imported" in result.stdout
        [episode] = _episodes(small, key, "claude-code:big")
    assert episode["step_count"] == 4
