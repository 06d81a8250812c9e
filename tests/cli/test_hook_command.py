"""`engram hook claude-code` as Claude Code runs it: a process given a hook event on stdin,
posting it to a real `engram serve`, answering on stdout, and never failing the agent."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import hook_payloads as payloads
from tests.conftest import auth
from tests.server import EngramServer, free_port, serving

ROOT = Path(__file__).resolve().parents[2]
OPERATOR = "egk_hook-cli-test-operator-key-0123456789abcdef"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngramServer]:
    with serving(tmp_path_factory.mktemp("hook-cli"), key=OPERATOR) as srv:
        yield srv


def _agent(server: EngramServer, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers=auth(key))


def _key(server: EngramServer, role: str = "agent") -> str:
    namespace = f"hook-cli-{uuid.uuid4().hex[:12]}"
    r = httpx.post(
        f"{server.url}/v1/keys",
        json={"namespace": namespace, "role": role},
        headers=auth(OPERATOR),
    )
    assert r.status_code == 201, r.text
    key: str = r.json()["key"]
    return key


def hook(stdin: bytes | dict[str, Any], *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the command hook as Claude Code does: the event on stdin, nothing else."""
    data = json.dumps(stdin).encode() if isinstance(stdin, dict) else stdin
    environ = {k: v for k, v in os.environ.items() if k not in ("ENGRAM_URL", "ENGRAM_KEY")}
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "hook", "claude-code", *args],
        input=data,
        env={**environ, **env},
        capture_output=True,
        cwd=ROOT,
        timeout=60,
    )
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode(), result.stderr.decode()
    )


def test_a_session_through_the_command_hook(server: EngramServer) -> None:
    key = _key(server)
    with _agent(server, key) as agent:
        _session(server, agent, key)


def _session(server: EngramServer, agent: httpx.Client, key: str) -> None:
    fact = "The shop's payments go through the billing service, never straight to Stripe"
    agent.post("/v1/memories", json={"type": "fact", "content": fact})
    sid = str(uuid.uuid4())
    target = ("--url", server.url, "--key", key)

    started = hook(payloads.session_start(sid), *target)
    assert started.returncode == 0, started.stderr
    answer = json.loads(started.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "SessionStart"
    assert fact in answer["additionalContext"]

    # ENGRAM_URL and ENGRAM_KEY stand for the options.
    env = {"ENGRAM_URL": server.url, "ENGRAM_KEY": key}
    prompted = hook(payloads.user_prompt_submit("how do shop payments reach billing", sid), **env)
    assert fact in json.loads(prompted.stdout)["hookSpecificOutput"]["additionalContext"]

    secret = "sk-ant-api03-" + "Zx9" * 10
    used = payloads.post_tool_use(
        "Bash", {"command": f"ANTHROPIC_API_KEY={secret} ./deploy"}, {"stdout": "ok"}, sid
    )
    for event in (used, payloads.stop(sid)):
        done = hook(event, **env)
        assert (done.returncode, json.loads(done.stdout)) == (0, {}), done.stderr

    [episode] = agent.get("/v1/episodes", params={"task_id": f"claude-code:{sid}"}).json()["items"]
    full = agent.get(f"/v1/episodes/{episode['id']}").json()
    assert (full["status"], full["outcome"], full["step_count"]) == ("completed", "unknown", 1)
    assert full["steps"][0]["input"] == {"command": "ANTHROPIC_API_KEY=[REDACTED] ./deploy"}
    assert secret not in json.dumps(full)


def test_a_closed_port_answers_empty_and_exits_0(tmp_path: Path) -> None:
    result = hook(payloads.stop(), "--url", f"http://127.0.0.1:{free_port()}", "--key", "egk_x")
    assert (result.returncode, result.stdout.strip()) == (0, "{}")
    assert "Engram unreachable" in result.stderr


@pytest.mark.parametrize("url", ["notaurl", "http://[::1", "ftp://127.0.0.1:1"])
def test_a_url_that_is_no_url_answers_empty_and_exits_0(url: str) -> None:
    result = hook(payloads.stop(), ENGRAM_URL=url)
    assert (result.returncode, result.stdout.strip()) == (0, "{}")
    assert result.stderr.count("\n") == 1, result.stderr
    assert "engram hook:" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_server_that_never_answers_is_given_up_on(tmp_path: Path) -> None:
    with socket.socket() as listener:  # accepts connections (the backlog), never replies
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        result = hook(payloads.stop(), "--url", url, "--timeout", "0.5")
    assert (result.returncode, result.stdout.strip()) == (0, "{}")
    assert "no answer" in result.stderr or "timed out" in result.stderr


@pytest.mark.parametrize(
    ("stdin", "reason"),
    [
        (b"", "the input is not a hook event"),
        (b"{not json", "the input is not a hook event"),
        (b"[1, 2]", "not an object"),
        (b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested too deep"),
        (b'{"tool_input": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested too deep"),
    ],
)
def test_bad_stdin_answers_empty_and_exits_0(
    server: EngramServer, stdin: bytes, reason: str
) -> None:
    result = hook(stdin, "--url", server.url, "--key", OPERATOR)
    assert (result.returncode, result.stdout.strip()) == (0, "{}")
    assert reason in result.stderr


def test_refusals_answer_empty_and_exit_0(server: EngramServer) -> None:
    event = payloads.post_tool_use("Bash", {"command": "ls"}, "", str(uuid.uuid4()))
    for key, status in (("egk_" + "0" * 43, "401"), (_key(server, "reader"), "403")):
        result = hook(event, "--url", server.url, "--key", key)
        assert (result.returncode, result.stdout.strip()) == (0, "{}")
        assert f"Engram answered {status}" in result.stderr
    # An event the server refuses (no session id) is reported the same way.
    result = hook({"hook_event_name": "Stop"}, "--url", server.url, "--key", OPERATOR)
    assert (result.returncode, result.stdout.strip()) == (0, "{}")
    assert "Engram answered 422" in result.stderr
    assert "session_id" in result.stderr


def test_bulky_events_are_cut_before_they_are_sent(server: EngramServer) -> None:
    key = _key(server)
    sid = str(uuid.uuid4())
    # Over the server's 1 MiB body limit, with a NUL the API refuses in any body.
    output = "x\u0000" + "y" * 2_000_000
    event = payloads.post_tool_use("Read", {"file_path": "huge.bin"}, output, sid)
    result = hook(event, "--url", server.url, "--key", key)
    assert (result.returncode, result.stdout.strip()) == (0, "{}"), result.stderr
    with _agent(server, key) as agent:
        listed = agent.get("/v1/episodes", params={"task_id": f"claude-code:{sid}"}).json()
    [episode] = listed["items"]
    assert episode["step_count"] == 1
