"""What every agent door shares: a tool call as a step (redacted, bounded, with its action
signatures), a session's project, the inferred outcome of a turn, and a turn's episode."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from app.learning.outcomes import CUT_SHORT, Inferred, carries_on, from_steps
from app.learning.signatures import Rules, signature_of, verification
from app.learning.steps import learning_steps
from app.models import Episode
from app.schemas.agents import Agent, AgentEvent
from app.schemas.episode import EpisodeContext, EpisodeCreate, StepCreate, StepStatus
from app.schemas.recall import RecallResponse
from app.services.agents.redaction import scrub

# Each of a step's input, output and error, and a prompt, is kept to this many characters.
FIELD_CHARS = 4000
NAME_CHARS = 256
TASK_CHARS = 4096


def task_of(agent: Agent, session_id: str) -> str:
    """The task id of an agent's session: what its recalls, episodes and rewards share."""
    return f"{agent.value}:{session_id}"


def project_of(cwd: str | None) -> str:
    """The project a session works in: its directory's name."""
    name = os.path.basename((cwd or "").rstrip("/"))
    return name[:120] or "unknown"


_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code", "status_code")
# What a failed run prints at its end: test runners' summaries, compilers' and shells' errors.
_FAILED_OUTPUT = re.compile(
    r"\b[1-9]\d* (failed|failing|errors?)\b|\bFAILED\b|\bFAIL\b|^error(\[\w+\])?:|"
    r"Traceback \(most recent call last\)|\bcommand not found\b|"
    r"\bexit (code|status) [1-9]\d*\b|\bBuild failed\b|\bnpm ERR!",
    re.MULTILINE,
)


def failed_output(output: Any) -> bool:
    """Whether a tool's answer says the call failed though the agent reported it done: a
    non-zero exit code, or the failure summary a test run or a build prints at its end."""
    if isinstance(output, dict):
        for key in _EXIT_KEYS:
            code = output.get(key)
            if isinstance(code, int) and not isinstance(code, bool) and code != 0:
                return True
        text = "\n".join(str(output.get(k) or "") for k in ("stdout", "stderr", "output"))
    elif isinstance(output, str):
        text = output
    else:
        return False
    return bool(_FAILED_OUTPUT.search(text[-2000:]))


def step_of(event: AgentEvent, *, cwd: str | None, rules: Rules | None) -> StepCreate:
    """A tool call as a step: the raw call kept (redacted and bounded), its signatures
    derived with the session's directory at hand."""
    tool = (event.tool or "unknown tool")[:NAME_CHARS]
    signature = signature_of(tool, tool, event.input, cwd=cwd or event.cwd, rules=rules)
    # A shell command's answer is read for its exit: the agents report a command that
    # ran, whatever it returned, as a tool call that succeeded.
    shell = isinstance(event.input, dict) and ("command" in event.input or "cmd" in event.input)
    failed = event.failed or (shell and bool(signature) and failed_output(event.output))
    error = None
    if failed and not event.failed:
        error = "the command reported a failure (see its output)"
    elif event.failed:
        raw = event.error if event.error is not None else "the tool call failed"
        scrubbed = scrub(raw if isinstance(raw, str) else str(raw), max_chars=FIELD_CHARS)
        error = scrubbed or "the tool call failed"
    metadata: dict[str, Any] = {}
    if event.call_id:
        metadata["tool_use_id"] = event.call_id[:NAME_CHARS]
    if event.interrupted:
        metadata["interrupted"] = True
    return StepCreate(
        action=tool,
        tool=tool,
        signature=[s[:NAME_CHARS] for s in signature[:64]] if signature is not None else None,
        input=scrub(event.input, max_chars=FIELD_CHARS),
        output=None if event.failed else scrub(event.output, max_chars=FIELD_CHARS),
        status=StepStatus.ERROR if failed else StepStatus.OK,
        error=error,
        metadata=metadata,
    )


def infer(skeletons: list[dict[str, Any]], event: AgentEvent, *, rules: Rules | None) -> Inferred:
    """The outcome a turn's steps point to (app/learning/outcomes.py), the turn closed by
    `event`: a stop, or the user's next prompt (which may ask the agent to go on)."""
    interrupted = event.interrupted or _interrupted(skeletons)
    return from_steps(
        learning_steps(skeletons),
        interrupted=interrupted,
        check_of=lambda action: verification(action, rules=rules),
        resumed=interrupted and carries_on(event.prompt or ""),
    )


def episode_seed(agent: Agent) -> str:
    # Claude Code's seed spelled out: its stored episodes' ids are made from it, so it
    # must not change with Agent's values.
    return "claude-code episode" if agent is Agent.CLAUDE_CODE else f"{agent.value} episode"


def turn_episode(
    agent: Agent,
    session_id: str,
    *,
    episode_id: str,
    task_type: str | None,
    prompt: str | None,
    cwd: str | None,
    transcript_path: str | None,
    steps: list[StepCreate] | None = None,
    recalled: RecallResponse | None = None,
) -> EpisodeCreate:
    """The episode of one turn: the prompt as its description, the project in its context,
    the skills its recall handed the agent as the skills it applied (what learning credits
    and measures them by)."""
    project = project_of(cwd)
    metadata: dict[str, Any] = {"session_id": session_id, "cwd": cwd}
    if transcript_path:
        metadata["transcript_path"] = transcript_path
    skills: list[str] = []
    if recalled is not None:
        metadata["recall_id"] = recalled.recall_id
        skills = [
            str(m.metadata["skill_id"])
            for m in recalled.selected
            if m.type == "skill" and m.metadata.get("skill_id")
        ]
    return EpisodeCreate(
        id=episode_id,
        task_id=task_of(agent, session_id),
        agent_id=agent.value,
        task_type=task_type,
        description=scrub(prompt, max_chars=FIELD_CHARS) if prompt else None,
        context=EpisodeContext(tags=[agent.value], features={"project": project}),
        steps=steps or [],
        skills_applied=skills,
        metadata=metadata,
    )


@dataclass(frozen=True, slots=True)
class Newest:
    id: str
    task_id: str
    status: str
    task_type: str | None
    outcome_source: str | None
    outcome: str | None
    confidence: float | None
    verdict: str | None
    steps: list[dict[str, Any]]


def newest_of(row: Episode) -> Newest:
    return Newest(
        id=row.id,
        task_id=row.task_id,
        status=row.status,
        task_type=row.task_type,
        outcome_source=row.outcome_source,
        outcome=row.outcome,
        confidence=row.outcome_confidence,
        verdict=row.verdict,
        steps=list(row.steps or []),
    )


def cut_short(newest: Newest) -> bool:
    """Whether the user interrupted the turn: a step of it (Claude Code's interrupted tool
    call), or its stop (Cursor's aborted one, Codex's turn_aborted: the inferred verdict
    says so)."""
    return _interrupted(newest.steps) or CUT_SHORT in (newest.verdict or "")


def _interrupted(skeletons: list[dict[str, Any]]) -> bool:
    """Whether a step of the turn was a tool call the user interrupted."""
    return any(s.get("interrupted") for s in skeletons)
