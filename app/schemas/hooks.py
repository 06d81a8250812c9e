"""What Claude Code's hooks send (one JSON object per lifecycle event) and what they read back."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints

from app.schemas.episode import Outcome

SessionId = Annotated[str, StringConstraints(min_length=1, max_length=200)]
# Bounded by the body limit; what is kept of it is cut by the service.
Text = str
Path = Annotated[str, StringConstraints(max_length=4096)]

_EXAMPLE: dict[str, Any] = {
    "session_id": "7f3c9a2e-5b1d-4c8e-9f0a-1e2d3c4b5a69",
    "transcript_path": "/home/dev/.claude/projects/shop/7f3c9a2e.jsonl",
    "cwd": "/home/dev/shop",
    "permission_mode": "default",
    "hook_event_name": "PostToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "pytest -q tests/test_cart.py", "description": "Run the tests"},
    "tool_response": {"stdout": "3 passed in 0.41s", "stderr": "", "interrupted": False},
    "tool_use_id": "toolu_01A2B3C4D5E6F7G8H9J0K1L2",
}


class ClaudeCodeHookEvent(BaseModel):
    """One hook event as Claude Code sends it; fields of events not listed here are
    accepted and ignored, so a newer Claude Code is never refused."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"examples": [_EXAMPLE]})

    session_id: SessionId = Field(
        description="Claude Code's session id: one episode at a time per session, and the "
        "task id `claude-code:<session_id>` that rewards name"
    )
    hook_event_name: Annotated[str, StringConstraints(min_length=1, max_length=100)] = Field(
        description="The lifecycle event: SessionStart, UserPromptSubmit, PostToolUse, "
        "PostToolUseFailure, Stop, SessionEnd are acted on; any other is answered with {}"
    )
    transcript_path: Path | None = Field(
        default=None, description="Path of the session's transcript file (kept with the episode)"
    )
    cwd: Path | None = Field(
        default=None, description="Working directory: the project recalled for at SessionStart"
    )
    permission_mode: Text | None = Field(
        default=None, description="Claude Code's permission mode (default, plan, ...); ignored"
    )
    source: Text | None = Field(
        default=None, description="SessionStart: startup, resume, clear or compact"
    )
    model: Any = Field(default=None, description="SessionStart: the model in use; ignored")
    prompt: Text | None = Field(
        default=None, description="UserPromptSubmit: the user's prompt, the task recalled for"
    )
    tool_name: Text | None = Field(
        default=None, description="PostToolUse(Failure): the tool called, the step's tool"
    )
    tool_input: Any = Field(
        default=None,
        description="PostToolUse(Failure): the tool's arguments, stored redacted and bounded",
    )
    tool_response: Any = Field(
        default=None, description="PostToolUse: the tool's result, stored redacted and bounded"
    )
    tool_use_id: Text | None = Field(
        default=None, description="PostToolUse(Failure): the call's id, kept in step metadata"
    )
    error: Any = Field(
        default=None, description="PostToolUseFailure: what went wrong, the step's error"
    )
    is_interrupt: StrictBool | None = Field(
        default=None, description="PostToolUseFailure: true when the user interrupted the tool"
    )
    stop_hook_active: StrictBool | None = Field(
        default=None, description="Stop: true when a stop hook already continued this turn"
    )
    reason: Text | None = Field(
        default=None, description="SessionEnd: why it ended (clear, logout, prompt_input_exit, ...)"
    )
    task_type: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = Field(
        default=None,
        description="UserPromptSubmit: the kind of work, when a wrapper knows it; without it "
        "Engram files the prompt under a kind of its project from its words",
    )
    outcome: Outcome | None = Field(
        default=None,
        description="Stop/SessionEnd: the outcome, when a wrapper knows it (Claude Code does "
        "not send one); without it the episode completes as unknown",
    )


class HookSpecificOutput(BaseModel):
    """Context Claude Code adds to the conversation."""

    hookEventName: str = Field(description="The event answered (as it was sent)")
    additionalContext: str = Field(
        description="The recalled memories and skills, as text for the model to read"
    )


class HookAnswer(BaseModel):
    """A hook's answer: empty, or context for the model."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}]})

    hookSpecificOutput: HookSpecificOutput | None = Field(
        default=None, description="Present when the event recalled something to tell the model"
    )
