"""What the transcript readers share: lenient JSON Lines, bounded fields, a session's turns."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from app.schemas.agents import Agent, AgentEvent, EventKind, SessionImport
from app.services.agents.redaction import scrub

# A tool's input or output, a prompt, an error: what is kept of each (the hook's bound).
FIELD_CHARS = 32_768
# SessionImport's own bound on a session's events.
MAX_EVENTS = 20_000
_NAME_CHARS = 256
_PATH_CHARS = 4096


def json_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON Lines file, in order; a line that is not one is skipped
    (a transcript being written ends in a partial line). An unreadable file is an OSError."""
    with path.open("rb") as lines:
        for line in lines:
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value


def _without_nul(value: Any) -> Any:
    # The API refuses NUL characters in any body.
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    return value


def bounded(value: Any) -> Any:
    """A bulky field redacted and cut, as the hooks send it."""
    if value is None:
        return None
    return _without_nul(scrub(value, max_chars=FIELD_CHARS))


def text_of(value: Any) -> str | None:
    """A string field, None when it is not one (or empty)."""
    return value if isinstance(value, str) and value else None


def path_of(value: Any) -> str | None:
    text = text_of(value)
    return text.replace("\x00", "") if text and len(text) <= _PATH_CHARS else None


class Turns:
    """A session's events as they are read: a prompt opens a turn, tool calls are its
    steps, the next prompt (or the end of the session) closes it with a stop."""

    def __init__(self, *, cwd: str | None, transcript_path: str | None) -> None:
        self.events: list[dict[str, Any]] = [
            {"kind": EventKind.START, "cwd": cwd, "transcript_path": transcript_path}
        ]
        self.prompts = 0
        self._open = False
        self._interrupted = False
        self._calls: dict[str, dict[str, Any]] = {}

    def prompt(self, text: str, *, cwd: str | None = None) -> None:
        self._close()
        self.events.append({"kind": EventKind.PROMPT, "prompt": bounded(text), "cwd": cwd})
        self.prompts += 1
        self._open = True

    def tool(self, name: str, tool_input: Any, *, call_id: str | None) -> None:
        """A call, its result to come (`result`). A call outside a turn (before the first
        prompt) has no episode to be a step of and is left out."""
        if not self._open or (call_id is not None and call_id in self._calls):
            return
        event: dict[str, Any] = {
            "kind": EventKind.TOOL,
            "tool": (name.replace("\x00", "") or "unknown")[:_NAME_CHARS],
            "input": bounded(tool_input),
            "call_id": call_id[:_NAME_CHARS] if call_id else None,
        }
        self.events.append(event)
        if call_id is not None:
            self._calls[call_id] = event

    def result(
        self, call_id: str, output: Any, *, failed: bool = False, interrupted: bool = False
    ) -> None:
        """The result of the call `call_id`: its output, or its error when it failed."""
        event = self._calls.get(call_id)
        if event is None:
            return
        event["failed"] = failed or interrupted
        event["interrupted"] = interrupted
        event["error" if failed or interrupted else "output"] = bounded(output)

    def interrupt(self) -> None:
        """The user cut the current turn short."""
        if self._open:
            self._interrupted = True

    def _close(self) -> None:
        if self._open:
            self.events.append({"kind": EventKind.STOP, "interrupted": self._interrupted})
        self._open = False
        self._interrupted = False

    def session(self, agent: Agent, session_id: str) -> SessionImport | None:
        """The session read, None when it holds no prompt (nothing was asked)."""
        self._close()
        if not self.prompts:
            return None
        events = self.events
        if len(events) > MAX_EVENTS:
            # The rest of a longer session is left out; the turn cut short still stops.
            events = events[: MAX_EVENTS - 1]
            if events[-1]["kind"] != EventKind.STOP:
                events.append({"kind": EventKind.STOP, "interrupted": False})
        return SessionImport(
            agent=agent,
            session_id=session_id.replace("\x00", "")[:200],
            events=[AgentEvent.model_validate(event) for event in events],
        )
