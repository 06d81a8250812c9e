"""`engram hook cursor|codex` as the agents run them, against a real `engram serve`.

The events become the session's episode, the answers are what the agent reads, and no
failure ever reaches the agent."""

from __future__ import annotations

import json
import os
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
CURSOR = ROOT / "tests" / "fixtures" / "agents" / "cursor"
OPERATOR = "egk_agent-hooks-test-operator-key-0123456789ab"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngramServer]:
    with serving(tmp_path_factory.mktemp("agent-hooks"), key=OPERATOR) as srv:
        yield srv


def _key(server: EngramServer) -> str:
    r = httpx.post(
        f"{server.url}/v1/keys",
        json={"namespace": f"agent-hooks-{uuid.uuid4().hex[:12]}", "role": "agent"},
        headers=auth(OPERATOR),
    )
    assert r.status_code == 201, r.text
    key: str = r.json()["key"]
    return key


def _run(args: list[str], stdin: bytes = b"", **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("ENGRAM_URL", "ENGRAM_KEY")}
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "hook", *args],
        input=stdin,
        env={**environ, **env},
        capture_output=True,
        cwd=ROOT,
        timeout=60,
    )
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode(), result.stderr.decode()
    )


def cursor(
    payload: dict[str, Any] | bytes, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    stdin = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return _run(["cursor", *args], stdin, **env)


def _payload(name: str, conversation: str) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads((CURSOR / f"{name}.json").read_text())
    return {**payload, "conversation_id": conversation}


def _episodes(server: EngramServer, key: str, task_id: str) -> list[dict[str, Any]]:
    r = httpx.get(f"{server.url}/v1/episodes", params={"task_id": task_id}, headers=auth(key))
    assert r.status_code == 200, r.text
    items: list[dict[str, Any]] = r.json()["items"]
    return items


def test_a_cursor_turn_through_the_hook(server: EngramServer) -> None:
    key = _key(server)
    conversation = str(uuid.uuid4())
    env = {"ENGRAM_URL": server.url, "ENGRAM_KEY": key}
    answers = {}
    for name in (
        "beforeSubmitPrompt",
        "beforeShellExecution",
        "afterShellExecution",
        "afterFileEdit",
        "stop",
    ):
        done = cursor(_payload(name, conversation), **env)
        assert done.returncode == 0, done.stderr
        answers[name] = json.loads(done.stdout)
    assert answers == {
        "beforeSubmitPrompt": {"continue": True},
        "beforeShellExecution": {"permission": "allow"},
        "afterShellExecution": {},
        "afterFileEdit": {},
        "stop": {},
    }
    [episode] = _episodes(server, key, f"cursor:{conversation}")
    full = httpx.get(f"{server.url}/v1/episodes/{episode['id']}", headers=auth(key)).json()
    assert full["status"] == "completed"
    assert [s["tool"] for s in full["steps"]] == ["Shell", "FileEdit"]


def test_cursor_failures_answer_the_safe_default(server: EngramServer) -> None:
    closed = ("--url", f"http://127.0.0.1:{free_port()}")
    for name, answer in (
        ("beforeSubmitPrompt", {"continue": True}),
        ("beforeReadFile", {"permission": "allow"}),
        ("afterShellExecution", {}),
    ):
        result = cursor(_payload(name, "c-1"), *closed, "--key", "egk_x")
        assert (result.returncode, json.loads(result.stdout)) == (0, answer)
        assert "Engram unreachable" in result.stderr
    bad = cursor(b"{not json", "--url", server.url)
    assert (bad.returncode, bad.stdout.strip()) == (0, "{}")
    assert "the input is not a hook event" in bad.stderr
    # The server refuses a payload without a conversation: the default answer still.
    refused = cursor(
        {"hook_event_name": "beforeSubmitPrompt"}, "--url", server.url, "--key", _key(server)
    )
    assert (refused.returncode, json.loads(refused.stdout)) == (0, {"continue": True})
    assert "Engram answered 422" in refused.stderr


def test_a_codex_turn_through_notify(server: EngramServer) -> None:
    key = _key(server)
    thread = str(uuid.uuid4())
    notification = {
        "type": "agent-turn-complete",
        "thread-id": thread,
        "turn-id": "turn-1",
        "cwd": "/home/dev/api",
        "input-messages": ["Add a /health endpoint"],
        "last-assistant-message": "Added it.",
    }
    done = _run(["codex", json.dumps(notification)], ENGRAM_URL=server.url, ENGRAM_KEY=key)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    [episode] = _episodes(server, key, f"codex:{thread}")
    assert episode["status"] == "completed"


def test_codex_failures_never_fail_codex(server: EngramServer) -> None:
    closed = _run(
        [
            "codex",
            '{"type": "agent-turn-complete", "turn-id": "1"}',
            "--url",
            f"http://127.0.0.1:{free_port()}",
        ]
    )
    assert closed.returncode == 0
    assert "Engram unreachable" in closed.stderr
    bad = _run(["codex", "not json", "--url", server.url])
    assert bad.returncode == 0
    assert "not a Codex notification" in bad.stderr
    other = _run(
        ["codex", '{"type": "approval-requested"}', "--url", server.url, "--key", _key(server)]
    )
    assert other.returncode == 0
    assert "Engram answered 422" in other.stderr
