"""Cursor's and Codex's live hooks read as agent events, and Cursor's answers.

Pure adapters, no network, no database. Cursor runs a command hook per event with JSON on
stdin (`conversation_id`, `generation_id`, `hook_event_name`, `workspace_roots`, and the
event's own fields) and reads JSON back on stdout. Codex runs its `notify` program with one
argument, a JSON notification; only `agent-turn-complete` exists."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlparse

from app.schemas.agents import AgentEvent, EventKind
from app.services.agents.transcripts._common import bounded, path_of, text_of

# Cursor's events that ask permission before an action: answered "allow" whatever happens,
# so that Engram never blocks the agent.
_PERMISSION_EVENTS = frozenset(
    {"beforeShellExecution", "beforeMCPExecution", "beforeReadFile", "preToolUse"}
)
_NAME = re.compile(r"[^A-Za-z0-9_-]+")


def _cwd(payload: dict[str, Any]) -> str | None:
    roots = payload.get("workspace_roots")
    if isinstance(roots, list) and roots and (root := path_of(roots[0])):
        return root
    return path_of(payload.get("cwd"))


def _decoded(value: Any) -> Any:
    """Cursor sends an MCP tool's input and result as JSON strings: decoded when they are."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _mcp_server(payload: dict[str, Any]) -> str:
    """The MCP server's name for the `mcp__<server>__<tool>` tool name. Cursor's payload
    names the server by its `url` or its `command`, not by its name in mcp.json, so the
    URL's host (or the command's program) stands for it."""
    for key in ("server_name", "server"):
        if name := text_of(payload.get(key)):
            return _NAME.sub("_", name)
    if url := text_of(payload.get("url")):
        return _NAME.sub("_", urlparse(url).hostname or url)
    if command := text_of(payload.get("command")):
        return _NAME.sub("_", command.split()[0].rsplit("/", 1)[-1])
    return "unknown"


def _exit_failed(payload: dict[str, Any]) -> bool:
    # Cursor's documented afterShellExecution has no exit code; one sent is used.
    code = payload.get("exit_code", payload.get("exitCode"))
    return type(code) is int and code != 0


def cursor_event(payload: dict[str, Any]) -> tuple[str, AgentEvent | None]:
    """(the session id, the event) of a Cursor hook payload; the event is None for a hook
    Engram does not record. A payload without a conversation_id is a ValueError.

    afterShellExecution and afterMCPExecution are recorded, with the command's output or the
    tool's result; their before-events come first, without either, and would record each
    call twice, so they are not. beforeReadFile is exploration, not recorded."""
    session_id = text_of(payload.get("conversation_id"))
    if session_id is None:
        raise ValueError("a Cursor hook payload needs a conversation_id")
    name = payload.get("hook_event_name")
    common: dict[str, Any] = {"cwd": _cwd(payload)}
    if transcript := path_of(payload.get("transcript_path")):
        common["transcript_path"] = transcript
    call_id = text_of(payload.get("tool_use_id"))
    event: AgentEvent | None = None
    if name == "sessionStart":
        event = AgentEvent(kind=EventKind.START, **common)
    elif name == "beforeSubmitPrompt":
        prompt = text_of(payload.get("prompt"))
        event = AgentEvent(kind=EventKind.PROMPT, prompt=bounded(prompt), **common)
    elif name == "afterShellExecution":
        failed = _exit_failed(payload)
        output = bounded(payload.get("output"))
        event = AgentEvent(
            kind=EventKind.TOOL,
            tool="Shell",
            input={"command": bounded(payload.get("command"))},
            output=None if failed else output,
            error=output if failed else None,
            failed=failed,
            call_id=call_id,
            **common,
        )
    elif name == "afterFileEdit":
        event = AgentEvent(
            kind=EventKind.TOOL,
            tool="FileEdit",
            input={"file_path": path_of(payload.get("file_path"))},
            output=bounded(payload.get("edits")),
            call_id=call_id,
            **common,
        )
    elif name == "afterMCPExecution":
        tool = _NAME.sub("_", text_of(payload.get("tool_name")) or "unknown")
        event = AgentEvent(
            kind=EventKind.TOOL,
            tool=f"mcp__{_mcp_server(payload)}__{tool}"[:256],
            input=bounded(_decoded(payload.get("tool_input"))),
            output=bounded(_decoded(payload.get("result_json"))),
            call_id=call_id,
            **common,
        )
    elif name == "stop":
        # completed, aborted (the user stopped it) or error.
        cut_short = payload.get("status") in ("aborted", "error")
        event = AgentEvent(kind=EventKind.STOP, interrupted=cut_short, **common)
    elif name == "sessionEnd":
        reason = text_of(payload.get("reason"))
        event = AgentEvent(kind=EventKind.END, reason=reason[:256] if reason else None, **common)
    return session_id, event


def cursor_answer(hook_event_name: str, context: str | None) -> dict[str, Any]:
    """What Cursor reads back from the hook: its action always allowed, the agent always
    let go on. Recalled context reaches the model only from sessionStart, whose documented
    output takes `additional_context`; beforeSubmitPrompt's output takes only `continue`
    and a message for the user, so a prompt's recall has no way in. The after-events and
    stop are fire-and-forget (a stop answered with a `followup_message` would make the
    agent go on, which Engram never asks)."""
    if hook_event_name == "beforeSubmitPrompt":
        return {"continue": True}
    if hook_event_name in _PERMISSION_EVENTS:
        return {"permission": "allow"}
    if hook_event_name == "sessionStart":
        return {"continue": True, **({"additional_context": context} if context else {})}
    return {}


def codex_notify_events(payload: dict[str, Any]) -> tuple[str, list[AgentEvent]]:
    """(the session id, the events) of a Codex notification: an `agent-turn-complete` is
    the turn's prompt (the last input message) and its stop. The session is the thread
    (`thread-id`, sent by newer Codex), else the turn. Any other type is a ValueError."""
    kind = payload.get("type")
    if kind != "agent-turn-complete":
        raise ValueError(f"Codex notification {kind!r} is not handled: only agent-turn-complete")
    session_id = next(
        (
            value
            for key in ("thread-id", "thread_id", "session-id", "session_id", "turn-id")
            if (value := text_of(payload.get(key)))
        ),
        None,
    )
    if session_id is None:
        raise ValueError("a Codex notification needs a thread-id or a turn-id")
    cwd = path_of(payload.get("cwd"))
    messages = payload.get("input-messages")
    last = messages[-1] if isinstance(messages, list) and messages else None
    events = []
    if prompt := text_of(last):
        events.append(AgentEvent(kind=EventKind.PROMPT, prompt=bounded(prompt), cwd=cwd))
    events.append(AgentEvent(kind=EventKind.STOP, cwd=cwd))
    return session_id[:200], events
