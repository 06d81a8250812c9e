"""The steps learning reads: an episode's step skeletons with agents' tool calls replaced
by their action signatures.

A skeleton without a `signature` (a step of a client that names its own actions, like
`pytest.run_tests`) is learned as it is, under its `tool.action` key. A skeleton whose
`signature` is a list was a tool call of a coding agent (app/learning/signatures.py):
an empty list is exploration (reading, searching) and is not a step of the procedure;
otherwise each signature becomes a step of its own, in order. A compound shell line
that failed is taken to have failed at its last part: the parts before it ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate
from typing import Any

from app.learning.reflection import action_key
from app.learning.skills import EpisodeView


def learning_steps(skeletons: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The skeletons as mining, reflection and skills see them (see the module's doc)."""
    out: list[dict[str, Any]] = []
    for step in skeletons:
        signatures = step.get("signature")
        if signatures is None:
            out.append(step)
            continue
        last = len(signatures) - 1
        for i, signature in enumerate(signatures):
            out.append(
                {
                    "tool": None,
                    "action": signature,
                    "status": step.get("status", "ok") if i == last else "ok",
                    "latency_ms": step.get("latency_ms") if i == last else None,
                    "tokens": step.get("tokens") if i == last else None,
                }
            )
    return out


def uses_skills(steps: Sequence[dict[str, Any]], outcome: str | None, told: bool) -> bool:
    """Whether an agent's turn is a use of the skills its recall handed out: it did
    something, and how that went is known (its outcome, or a reward that `told` the task's
    success). A "thanks" turn, or one that ended with nothing known, says nothing of them."""
    return bool(steps) and (outcome in ("success", "failure") or told)


def actions_of(skeletons: list[dict[str, Any]]) -> list[str]:
    """The actions of an episode in order, signatures where it has them."""
    return [action_key(s) for s in learning_steps(skeletons)]


def merge_turns(
    views: Sequence[EpisodeView], tasks: Sequence[str | None], outcomes: Sequence[str | None]
) -> list[EpisodeView]:
    """A coding agent's consecutive turns at one task as one episode: "cut the release",
    then "the tag never got pushed" is one procedure done in two turns. `tasks[i]` is the
    session's task id of an agent's turn (None: an episode of its own), `outcomes[i]` the
    turn's own outcome (reported or inferred; a reward on the task may judge all of its
    turns); the task ends as its last judged turn (a success or a failure) did, and is
    `repaired` when it succeeded after a turn that failed."""
    judged = [o in ("success", "failure") for o in outcomes]
    out: list[EpisodeView] = []
    group: list[int] = []

    def close() -> None:
        if not group:
            return
        parts = [views[i] for i in group]
        at = next((n for n in reversed(range(len(group))) if judged[group[n]]), len(group) - 1)
        last = parts[at]
        failed_before = any(outcomes[i] == "failure" for i in group[:at])
        out.append(
            EpisodeView(
                id=last.id,
                actions=tuple(a for v in parts for a in v.actions),
                statuses=tuple(s for v in parts for s in v.statuses),
                success=last.success,
                reward=last.reward,
                context=parts[-1].context,
                skills=tuple(dict.fromkeys(s for v in parts for s in v.skills)),
                shown=frozenset().union(*(v.shown for v in parts)),
                repaired=last.success and failed_before,
                turns=tuple(accumulate(len(v.actions) for v in parts[:-1])),
            )
        )
        group.clear()

    for i, task in enumerate(tasks):
        if group and (task is None or tasks[group[-1]] != task):
            close()
        group.append(i)
        if task is None:
            close()
    close()
    return out
