"""Cursor's hook payloads and Codex's notifications as agent events; Cursor's answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.schemas.agents import EventKind
from app.services.agents.payloads import codex_notify_events, cursor_answer, cursor_event

CURSOR = Path(__file__).resolve().parents[2] / "fixtures" / "agents" / "cursor"
CONVERSATION = "c0a1b2c3-d4e5-4f60-8a7b-9c0d1e2f3a4b"


def _payload(name: str, **changes: Any) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads((CURSOR / f"{name}.json").read_text())
    payload.update(changes)
    return payload


def test_a_prompt() -> None:
    session_id, event = cursor_event(_payload("beforeSubmitPrompt"))
    assert session_id == CONVERSATION
    assert event is not None
    assert (event.kind, event.prompt) == (EventKind.PROMPT, "Make the navbar sticky on mobile")
    assert event.cwd == "/home/dev/web"  # the first workspace root


def test_a_shell_command_after_it_ran() -> None:
    _, event = cursor_event(_payload("afterShellExecution"))
    assert event is not None
    assert (event.kind, event.tool) == (EventKind.TOOL, "Shell")
    assert event.input == {"command": "npm test -- Navbar"}
    assert (event.output, event.failed) == ("PASS src/Navbar.test.tsx\nTests: 3 passed", False)
    # An exit code, when Cursor sends one, says whether it failed.
    _, failed = cursor_event(_payload("afterShellExecution", exit_code=1, output="1 failed"))
    assert failed is not None
    assert (failed.failed, failed.error, failed.output) == (True, "1 failed", None)


def test_a_file_edit() -> None:
    _, event = cursor_event(_payload("afterFileEdit"))
    assert event is not None
    assert (event.tool, event.input) == ("FileEdit", {"file_path": "/home/dev/web/src/Navbar.tsx"})
    assert event.output == [{"old_string": "position: relative", "new_string": "position: sticky"}]


def test_an_mcp_call_is_named_after_its_server_and_tool() -> None:
    _, event = cursor_event(_payload("afterMCPExecution"))
    assert event is not None
    assert event.tool == "mcp__mcp_linear_app__create_issue"
    assert (event.input, event.output) == ({"title": "Sticky navbar"}, {"id": "WEB-12"})
    _, local = cursor_event(
        _payload("afterMCPExecution", url=None, command="/usr/local/bin/db-mcp --ro")
    )
    assert local is not None
    assert local.tool == "mcp__db-mcp__create_issue"


@pytest.mark.parametrize(
    ("status", "interrupted"), [("completed", False), ("aborted", True), ("error", True)]
)
def test_a_stop(status: str, interrupted: bool) -> None:
    _, event = cursor_event(_payload("stop", status=status))
    assert event is not None
    assert (event.kind, event.interrupted) == (EventKind.STOP, interrupted)


def test_session_start_and_end() -> None:
    _, start = cursor_event(_payload("sessionStart"))
    assert start is not None
    assert (start.kind, start.cwd) == (EventKind.START, "/home/dev/web")
    _, end = cursor_event(
        _payload("sessionStart", hook_event_name="sessionEnd", reason="user_close")
    )
    assert end is not None
    assert (end.kind, end.reason) == (EventKind.END, "user_close")


@pytest.mark.parametrize("name", ["beforeReadFile", "beforeShellExecution", "beforeMCPExecution"])
def test_hooks_not_recorded(name: str) -> None:
    assert cursor_event(_payload(name)) == (CONVERSATION, None)


def test_cwd_without_workspace_roots() -> None:
    _, event = cursor_event(
        _payload("afterShellExecution", workspace_roots=[], cwd="/home/dev/web/pkg")
    )
    assert event is not None
    assert event.cwd == "/home/dev/web/pkg"


def test_a_secret_in_a_command_is_redacted() -> None:
    _, event = cursor_event(
        _payload("afterShellExecution", command="curl -H 'Authorization: Bearer abcdefgh12345678'")
    )
    assert event is not None
    assert "abcdefgh12345678" not in json.dumps(event.input)


@pytest.mark.parametrize("payload", [{}, {"hook_event_name": "stop"}, {"conversation_id": ""}])
def test_a_payload_without_a_conversation_is_refused(payload: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="conversation_id"):
        cursor_event(payload)


@pytest.mark.parametrize(
    ("name", "context", "answer"),
    [
        ("beforeSubmitPrompt", "recalled", {"continue": True}),
        ("beforeShellExecution", None, {"permission": "allow"}),
        ("beforeMCPExecution", None, {"permission": "allow"}),
        ("beforeReadFile", None, {"permission": "allow"}),
        (
            "sessionStart",
            "Use the billing service",
            {"continue": True, "additional_context": "Use the billing service"},
        ),
        ("sessionStart", None, {"continue": True}),
        ("afterShellExecution", None, {}),
        ("afterFileEdit", None, {}),
        ("stop", "recalled", {}),
        ("somethingNew", None, {}),
    ],
)
def test_cursor_answers_never_block(name: str, context: str | None, answer: dict[str, Any]) -> None:
    assert cursor_answer(name, context) == answer


def test_a_codex_turn_is_its_prompt_and_its_stop() -> None:
    session_id, events = codex_notify_events(
        {
            "type": "agent-turn-complete",
            "thread-id": "b5f6c1c2-1111-2222-3333-444455556666",
            "turn-id": "12345",
            "cwd": "/home/dev/api",
            "input-messages": ["Rename foo", "and bar too"],
            "last-assistant-message": "Renamed both.",
        }
    )
    assert session_id == "b5f6c1c2-1111-2222-3333-444455556666"
    assert [(e.kind, e.prompt, e.cwd) for e in events] == [
        (EventKind.PROMPT, "and bar too", "/home/dev/api"),
        (EventKind.STOP, None, "/home/dev/api"),
    ]


def test_an_older_codex_notification_is_its_own_session() -> None:
    session_id, events = codex_notify_events(
        {"type": "agent-turn-complete", "turn-id": "12345", "input-messages": []}
    )
    assert session_id == "12345"
    assert [e.kind for e in events] == [EventKind.STOP]


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "approval-requested", "turn-id": "1"},
        {"turn-id": "1"},
        {"type": "agent-turn-complete"},
    ],
)
def test_other_codex_notifications_are_refused(payload: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="agent-turn-complete|turn-id"):
        codex_notify_events(payload)
