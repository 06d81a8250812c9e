"""Claude Code hook payloads, one builder per event kind, shaped as Claude Code sends them
(stdin of a command hook, body of an HTTP hook).

Fields every event carries:
- session_id: the session's id (a UUID); Engram keys the session's episode and task on it.
- transcript_path: the session's transcript, a JSON Lines file under ~/.claude/projects.
- cwd: the directory Claude Code runs in (the project).
- permission_mode: "default", "plan", "acceptEdits" or "bypassPermissions".
- hook_event_name: which event this is.

Fields of each event are documented on its builder.
"""

from __future__ import annotations

from typing import Any

SESSION = "4d1c2b3a-9e8f-4a7b-8c6d-5e4f3a2b1c0d"
CWD = "/home/dev/shop"


def _common(event: str, session_id: str) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "transcript_path": f"/home/dev/.claude/projects/-home-dev-shop/{session_id}.jsonl",
        "cwd": CWD,
        "permission_mode": "default",
        "hook_event_name": event,
    }


def session_start(session_id: str = SESSION, *, source: str = "startup") -> dict[str, Any]:
    """source: "startup" (a new session), "resume" (--resume, --continue, /resume),
    "clear" (/clear) or "compact" (after compaction); model: the model's id."""
    return {**_common("SessionStart", session_id), "source": source, "model": "claude-sonnet-4-5"}


def user_prompt_submit(prompt: str, session_id: str = SESSION) -> dict[str, Any]:
    """prompt: what the user typed, before Claude sees it."""
    return {**_common("UserPromptSubmit", session_id), "prompt": prompt}


def post_tool_use(
    tool_name: str, tool_input: Any, tool_response: Any, session_id: str = SESSION
) -> dict[str, Any]:
    """tool_name: the tool called (Bash, Read, Edit, Write, Grep, mcp__<server>__<tool>...);
    tool_input: its arguments as Claude gave them; tool_response: what the tool returned
    (Bash: stdout, stderr, interrupted; Read: the file; Edit: the patch...); tool_use_id:
    the call's id."""
    return {
        **_common("PostToolUse", session_id),
        "tool_name": tool_name,
        "tool_input": tool_input,
        "tool_response": tool_response,
        "tool_use_id": "toolu_01HookPayloadOk0000000001",
    }


def post_tool_use_failure(
    tool_name: str, tool_input: Any, error: str, session_id: str = SESSION
) -> dict[str, Any]:
    """As PostToolUse for a call that failed: error says why (no tool_response);
    is_interrupt: true when the user interrupted it."""
    return {
        **_common("PostToolUseFailure", session_id),
        "tool_name": tool_name,
        "tool_input": tool_input,
        "tool_use_id": "toolu_01HookPayloadFail000000001",
        "error": error,
        "is_interrupt": False,
    }


def stop(session_id: str = SESSION) -> dict[str, Any]:
    """Claude finished its turn. stop_hook_active: true when a Stop hook already made it
    go on (a hook that blocks again would loop)."""
    return {**_common("Stop", session_id), "stop_hook_active": False}


def session_end(session_id: str = SESSION, *, reason: str = "prompt_input_exit") -> dict[str, Any]:
    """The session ends. reason: "clear", "logout", "prompt_input_exit" or "other"."""
    return {**_common("SessionEnd", session_id), "reason": reason}


def notification(session_id: str = SESSION) -> dict[str, Any]:
    """An event Engram does not act on: message is what Claude Code shows the user."""
    return {
        **_common("Notification", session_id),
        "message": "Claude needs your permission to use Bash",
        "notification_type": "permission_prompt",
    }
