"""Agent sessions as Engram reads them: one event model for every agent (Claude Code,
Codex, Cursor), whether it arrives live from a hook or from an imported transcript."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints

from app.schemas.episode import Outcome

SessionId = Annotated[str, StringConstraints(min_length=1, max_length=200)]
Path = Annotated[str, StringConstraints(max_length=4096)]
ToolName = Annotated[str, StringConstraints(min_length=1, max_length=256)]


class Agent(StrEnum):
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    CURSOR = "cursor"


class EventKind(StrEnum):
    START = "start"  # a session (re)started: recall for the project
    PROMPT = "prompt"  # the user asked for something: a new turn, recall for it
    TOOL = "tool"  # a tool call and how it went: a step of the turn
    STOP = "stop"  # the agent finished its turn: the turn's episode completes
    END = "end"  # the session ended


class AgentEvent(BaseModel):
    """One event of an agent's session, in the agent's own order."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    kind: EventKind = Field(description="What happened: start, prompt, tool, stop or end")
    cwd: Path | None = Field(default=None, description="The session's working directory")
    prompt: str | None = Field(default=None, description="prompt: what the user asked")
    tool: ToolName | None = Field(
        default=None, description="tool: the tool called (Bash, Edit, shell, apply_patch...)"
    )
    input: Any = Field(default=None, description="tool: its arguments")
    output: Any = Field(default=None, description="tool: what it returned")
    error: Any = Field(default=None, description="tool: what went wrong, when it failed")
    failed: StrictBool = Field(default=False, description="tool: the call failed")
    interrupted: StrictBool = Field(
        default=False, description="tool: the user interrupted it; stop: the turn was cut short"
    )
    call_id: Annotated[str, StringConstraints(max_length=256)] | None = Field(
        default=None, description="tool: the call's id, kept in the step's metadata"
    )
    reason: Annotated[str, StringConstraints(max_length=256)] | None = Field(
        default=None, description="end: why the session ended"
    )
    outcome: Outcome | None = Field(
        default=None, description="stop: the outcome, when a wrapper knows it"
    )
    transcript_path: Path | None = Field(default=None, description="Where the session is kept")


_IMPORT_EXAMPLE: dict[str, Any] = {
    "agent": "claude-code",
    "session_id": "7f3c9a2e-5b1d-4c8e-9f0a-1e2d3c4b5a69",
    "events": [
        {"kind": "start", "cwd": "/home/dev/shop"},
        {"kind": "prompt", "cwd": "/home/dev/shop", "prompt": "cut release 1.4.2"},
        {
            "kind": "tool",
            "cwd": "/home/dev/shop",
            "tool": "Bash",
            "input": {"command": "uv run pytest -q"},
            "output": {"stdout": "12 passed", "stderr": "", "interrupted": False},
        },
        {"kind": "stop", "cwd": "/home/dev/shop"},
    ],
}


class SessionImport(BaseModel):
    """A past session, read from the agent's transcript, taken in as its events."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [_IMPORT_EXAMPLE]})

    agent: Agent = Field(description="The agent that ran the session")
    session_id: SessionId = Field(description="The agent's id of the session")
    events: list[AgentEvent] = Field(
        min_length=1,
        description="The session's events, oldest first; at most 20,000 (more is a 413), "
        "within the body limit",
    )


class SessionImported(BaseModel):
    """What an import added: nothing when the session was imported before."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "session_id": "7f3c9a2e-5b1d-4c8e-9f0a-1e2d3c4b5a69",
                    "imported": True,
                    "episodes": 1,
                    "steps": 1,
                }
            ]
        }
    )

    session_id: str = Field(description="The session imported")
    imported: bool = Field(description="False when the session was already there")
    episodes: int = Field(description="Episodes (turns) created")
    steps: int = Field(description="Steps recorded across them")
