"""Claude Code transcripts and Codex rollouts read as sessions of turns.

The events in order, tool calls paired with their results, failures and interruptions, odd
lines skipped, sub-agents' work inside the turn that delegated it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from app.schemas.agents import AgentEvent, EventKind
from app.services.agents.transcripts import (
    claude_code_files,
    codex_files,
    read_claude_code,
    read_codex,
)
from app.services.agents.transcripts._common import FIELD_CHARS, MAX_EVENTS

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "agents"
CLAUDE = FIXTURES / "claude-code"
SESSION = "5a7e1c2d-3b4f-4e6a-8c9d-0e1f2a3b4c5d"
CODEX = FIXTURES / "codex"
ROLLOUT = "0199e2a4-6c1b-7d30-9a8e-5f4b3c2d1e0f"
OLD_ROLLOUT = "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a98"


def _shape(events: list[AgentEvent]) -> list[str]:
    """Each event as `kind` or `tool:<name>`, for order checks."""
    return [f"tool:{e.tool}" if e.kind == EventKind.TOOL else e.kind.value for e in events]


def _tools(events: list[AgentEvent]) -> dict[str, AgentEvent]:
    return {e.call_id: e for e in events if e.kind == EventKind.TOOL and e.call_id}


def _write(path: Path, entries: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in entries))
    return path


def _user(text: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": text}, **extra}


def _call(call_id: str, name: str, tool_input: Any, **extra: Any) -> dict[str, Any]:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}
    return {"type": "assistant", "message": {"role": "assistant", "content": [block]}, **extra}


def _result(call_id: str, content: Any, **extra: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    return _user([block], **extra)


# Claude Code


def test_a_claude_code_session_is_its_turns_in_order() -> None:
    [session] = read_claude_code(CLAUDE / "-home-dev-shop" / f"{SESSION}.jsonl")
    assert (session.agent, session.session_id) == ("claude-code", SESSION)
    assert _shape(session.events) == [
        "start",
        "prompt",
        "tool:Bash",
        "tool:Read",
        "tool:Edit",
        "tool:Bash",
        "stop",
        "prompt",
        "tool:Task",
        "tool:Grep",  # the sidechain in the session's own file
        "tool:Glob",  # the sub-agent's own file, by its time
        "tool:Write",
        "tool:Bash",
        "stop",
        "prompt",
        "tool:Bash",
        "stop",
    ]
    start = session.events[0]
    assert (start.cwd, Path(start.transcript_path or "").name) == (
        "/home/dev/shop",
        f"{SESSION}.jsonl",
    )
    prompts = [e.prompt for e in session.events if e.kind == EventKind.PROMPT]
    # Claude Code's own lines (the caveat, a local command's output) and the sub-agent's
    # delegated task are not prompts.
    assert prompts == [
        "The cart total test fails, can you fix it?",
        "Add a test for the discount codes, then run the e2e suite",
        "Skip e2e, just commit it",
    ]


def test_claude_code_tool_calls_carry_their_results() -> None:
    [session] = read_claude_code(CLAUDE / "-home-dev-shop" / f"{SESSION}.jsonl")
    tools = _tools(session.events)
    failing = tools["toolu_01Bash0000000000000001"]
    assert (failing.failed, failing.output) == (True, None)
    assert "FAILED tests/test_cart.py::test_total" in failing.error
    read = tools["toolu_01Read0000000000000002"]
    assert read.input == {"file_path": "/home/dev/shop/cart.py"}
    assert "return round(sum(items), 0)" in read.output  # text blocks joined
    assert (read.failed, read.error) == (False, None)
    # Secrets are taken out before anything leaves the machine.
    assert tools["toolu_01Bash0000000000000004"].input == {
        "command": "API_TOKEN=[REDACTED] pytest -q tests/test_cart.py"
    }
    assert "fake-token" not in session.model_dump_json()


def test_an_interruption_marks_the_call_and_the_turn() -> None:
    [session] = read_claude_code(CLAUDE / "-home-dev-shop" / f"{SESSION}.jsonl")
    e2e = _tools(session.events)["toolu_01Bash0000000000000008"]
    assert (e2e.failed, e2e.interrupted) == (True, True)
    stops = [e.interrupted for e in session.events if e.kind == EventKind.STOP]
    assert stops == [False, True, False]


def test_a_directory_is_every_session_in_it() -> None:
    # The sub-agent's file belongs to its session; the empty session holds no prompt.
    names = [f.name for f in claude_code_files(CLAUDE)]
    assert names == [f"{SESSION}.jsonl", "9b8c7d6e-5f4a-4b3c-8d2e-1f0a9b8c7d6e.jsonl"]
    assert [s.session_id for s in read_claude_code(CLAUDE)] == [SESSION]


def test_sub_agent_files_beside_the_session_belong_to_it(tmp_path: Path) -> None:
    """The older layout: `agent-<id>.jsonl` beside the session, holding its session id."""
    sid = "11111111-2222-4333-8444-555555555555"
    at = "2025-10-14T10:00:0{}Z"
    _write(
        tmp_path / f"{sid}.jsonl",
        [
            _user("Explore the repo", sessionId=sid, timestamp=at.format(1)),
            _call("t1", "Task", {"prompt": "look"}, sessionId=sid, timestamp=at.format(2)),
            _result("t1", "done", sessionId=sid, timestamp=at.format(5)),
        ],
    )
    side = {"sessionId": sid, "isSidechain": True}
    _write(
        tmp_path / "agent-9f8e7d.jsonl",
        [
            _user("look", **side, timestamp=at.format(3)),
            _call("g1", "Grep", {"pattern": "x"}, **side, timestamp=at.format(3)),
            _result("g1", "a.py:1: x", **side, timestamp=at.format(4)),
        ],
    )
    _write(tmp_path / "agent-0000aa.jsonl", [_user("other", sessionId="another", isSidechain=True)])
    [session] = read_claude_code(tmp_path)
    assert _shape(session.events) == ["start", "prompt", "tool:Task", "tool:Grep", "stop"]


def test_odd_claude_code_files(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "a-session.jsonl",
        [
            _call("early", "Bash", {"command": "ls"}, sessionId="s-1"),  # before any prompt
            "[1, 2, 3]",
            '{"type": "mystery", "payload": 1}',
            _user("Fix it", sessionId="s-1"),
            _call("big", "Read", {"file_path": "huge.log"}),
            _result("big", "x" * (FIELD_CHARS * 3)),
            _call("never", "Bash", {"command": "sleep 1000"}),  # no result: the file ends
            b"\xff\xfe not utf-8".decode("latin-1"),
        ],
    )
    [session] = read_claude_code(path)
    # A file not named after its session takes the id its entries give.
    assert session.session_id == "s-1"
    assert _shape(session.events) == ["start", "prompt", "tool:Read", "tool:Bash", "stop"]
    tools = _tools(session.events)
    assert len(tools["big"].output) < FIELD_CHARS + 100
    assert tools["big"].output.endswith("more characters]")
    assert (tools["never"].output, tools["never"].failed) == (None, False)
    empty = _write(tmp_path / "empty.jsonl", ["not json", _call("t", "Bash", {})])
    assert read_claude_code(empty) == []


def test_a_session_longer_than_an_import_takes_is_cut_at_its_bound(tmp_path: Path) -> None:
    entries: list[Any] = [_user("Run everything", sessionId="long")]
    entries += [_call(f"c{i}", "Bash", {"command": f"echo {i}"}) for i in range(MAX_EVENTS + 50)]
    [session] = read_claude_code(_write(tmp_path / "long.jsonl", entries))
    assert len(session.events) == MAX_EVENTS
    assert session.events[-1].kind == EventKind.STOP


# Codex


def test_a_current_codex_rollout() -> None:
    [path] = [p for p in codex_files(CODEX) if ROLLOUT in p.name]
    [session] = read_codex(path)
    assert (session.agent, session.session_id) == ("codex", ROLLOUT)
    assert _shape(session.events) == [
        "start",
        "prompt",
        "tool:shell",
        "tool:apply_patch",
        "tool:exec_command",
        "stop",
        "prompt",
        "tool:update_plan",
        "tool:shell",
        "stop",
    ]
    assert session.events[0].cwd == "/home/dev/api"
    # The prompt is the user's message once (not its response item too), never the
    # environment Codex injects.
    prompts = [e.prompt for e in session.events if e.kind == EventKind.PROMPT]
    assert prompts == ["Add a /health endpoint and test it", "Install httpx and update the plan"]
    tools = _tools(session.events)
    shell = tools["call_shell_01"]
    assert shell.input == {
        "command": ["bash", "-lc", "rg -n 'def ' app/routes.py"],
        "workdir": "/home/dev/api",
    }
    assert (shell.output, shell.failed) == ("3:def index():\n", False)
    assert tools["call_patch_02"].input.startswith("*** Begin Patch")
    assert tools["call_patch_02"].failed is False
    exec_command = tools["call_exec_03"]
    assert exec_command.failed is True
    assert "Process exited with code 1" in exec_command.error
    aborted = tools["call_shell_05"]
    assert (aborted.failed, aborted.interrupted) == (True, True)
    assert [e.interrupted for e in session.events if e.kind == EventKind.STOP] == [False, True]


def test_an_older_codex_rollout() -> None:
    [path] = [p for p in codex_files(CODEX) if OLD_ROLLOUT in p.name]
    [session] = read_codex(path)
    assert session.session_id == OLD_ROLLOUT
    assert _shape(session.events) == ["start", "prompt", "tool:shell", "tool:local_shell", "stop"]
    # The older meta has no cwd: the environment context gives it.
    assert session.events[0].cwd == "/home/dev/cli"
    assert session.events[1].prompt == "Why does `make lint` fail?"
    tools = _tools(session.events)
    assert tools["call_old_1"].failed is True  # exit code 2 in the output's metadata
    assert "E501" in tools["call_old_1"].error
    assert tools["call_old_2"].input["command"] == ["sed", "-n", "1,5p", "setup.cfg"]
    assert tools["call_old_2"].output == "[flake8]\nmax-line-length = 79\n"


def test_a_directory_is_every_rollout_under_it(tmp_path: Path) -> None:
    shutil.copytree(CODEX, tmp_path / "sessions")
    (tmp_path / "sessions" / "2025" / "notes.jsonl").write_text('{"type": "x"}\n')
    sessions = read_codex(tmp_path / "sessions")
    assert sorted(s.session_id for s in sessions) == sorted([ROLLOUT, OLD_ROLLOUT])


@pytest.mark.parametrize(
    ("output", "failed"),
    [
        (json.dumps({"output": "ok", "metadata": {"exit_code": 0}}), False),
        (json.dumps({"output": "boom", "metadata": {"exit_code": 1}}), True),
        ({"content": "denied", "success": False}, True),
        ("Exit code: 0\nWall time: 0.2 seconds\nOutput:\nerror: none of it", False),
        ("Exit code: 127\nOutput:\nbash: nope: command not found", True),
        ("apply_patch verification failed: no such file", True),
        ("Plan updated", False),
        ([{"type": "input_text", "text": "listed"}], False),
    ],
)
def test_codex_outputs_say_whether_the_call_failed(
    tmp_path: Path, output: Any, failed: bool
) -> None:
    call = {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c"}
    result = {"type": "function_call_output", "call_id": "c", "output": output}
    path = _write(
        tmp_path / "rollout-2025-01-01T00-00-00-abc.jsonl",
        [
            {"type": "event_msg", "payload": {"type": "user_message", "message": "go"}},
            {"type": "response_item", "payload": call},
            {"type": "response_item", "payload": result},
        ],
    )
    [session] = read_codex(path)
    # No meta: the file's name stands for the session.
    assert session.session_id == "rollout-2025-01-01T00-00-00-abc"
    assert _tools(session.events)["c"].failed is failed


def test_a_rollout_without_a_prompt_yields_nothing(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "rollout-x.jsonl",
        [{"type": "session_meta", "payload": {"id": "s", "cwd": "/x"}}, "garbage"],
    )
    assert read_codex(path) == []
