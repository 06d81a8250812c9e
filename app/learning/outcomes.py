"""Outcomes without a human (pure): how an agent's turn ended, inferred from the session.

Evidence, strongest first:
- the user's next words: a complaint ("that broke the build", "still failing", "revert
  it") is a failure, thanks or approval ("great, thanks", "looks good") a success;
- the last check the agent ran (a test, build, lint, type check or deploy command): its
  result, unless a later run of the same command says otherwise;
- failures left unresolved: a command that failed and never ran cleanly afterwards;
- an interruption by the user, unless their next words ask the agent to go on ("sorry,
  hit esc by accident, carry on"): then the work goes on in the next turn, judged there.
A turn with none of these is left unknown: an inference is made only where it is likely
right. Each inference carries its confidence and the evidence it rests on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

SUCCESS = "success"
FAILURE = "failure"
UNKNOWN = "unknown"

CHECK_PASSED = 0.8
CHECK_FAILED = 0.85
UNRESOLVED = 0.65
INTERRUPTED = 0.6
REPLY = 0.9
CUT_SHORT = "the user interrupted the agent"
RESUMED = f"{CUT_SHORT}, then asked it to go on"
# Below this, an inference is not worth labelling the episode with.
MIN_CONFIDENCE = 0.6

# Words about the turn before, not a new task: "fix the failing test" asks for work,
# "that broke the build" judges it.
_NEGATIVE = re.compile(
    r"\b(that|this|it|you)('?s| has| have| just)? (broke|break|broken|failed|fails|crashed|"
    r"is wrong|was wrong)\b|\bstill (fail\w*|broken|red|wrong|erroring|not)\b|"
    r"\b(doesn'?t|didn'?t|does not|did not|won'?t|isn'?t) (work|apply|pass|build|run|compile|"
    r"deploy|working)\b|\bnot working\b|\brevert (it|that|this|the)\b|"
    r"\bundo (it|that|this)\b|\broll ?back\b|\bthat'?s not (it|right|what)\b|"
    r"\bnot what i\b|^(no|nope)\b|\bwrong\b|"
    # A repair of what was just done: "fix it", "sort that out" (not "fix this bug").
    r"\b(fix|redo|repair) (it|that)\b|\bsort (it|that|this) out\b|\bfix this\W*$",
    re.IGNORECASE,
)
# On the same work, plainer words also say the turn failed: the user would not ask for the
# same kind of work again in these words if it had gone well.
_NEGATIVE_SAME_WORK = re.compile(
    r"\b(red|fails?|failing|failed|broke|broken|breaks|errors?|crash\w*|stale|wrong|"
    r"never|still|anymore|no longer|missing|there'?s no|there is no|there are no|"
    r"isn'?t|wasn'?t|didn'?t|doesn'?t|hasn'?t|"
    r"won'?t|can'?t|not (there|on|in|showing|deployed|released|applied|updated|working|fixed)|"
    r"fix (it|that|this)|sort (it|that|this) out|stuck|hangs?|hanging|timed out|exceptions?|"
    r"panic\w*|\w*backoff|oom\w*|out of memory)\b|\?\?",
    re.IGNORECASE,
)
# After an interruption: the user asks the agent to go on with the same work.
_CARRY_ON = re.compile(
    r"\b(carry on|continue|go on|keep going|go ahead|proceed|resume|(by|on) accident|"
    r"by mistake|didn'?t mean to)\b",
    re.IGNORECASE,
)
_POSITIVE = re.compile(
    r"\b(thanks|thank you|thx|great|perfect|awesome|excellent|looks good|lgtm|well done|"
    r"good job|that did it|ship it|all green)\b|\b(it|that|this) (works|worked)\b|"
    r"\b(works|working|passes|passing) now\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Inferred:
    outcome: str  # success, failure or unknown
    confidence: float
    evidence: list[str] = field(default_factory=list)

    @property
    def labelled(self) -> bool:
        return self.outcome != UNKNOWN and self.confidence >= MIN_CONFIDENCE

    def verdict(self) -> str:
        said = "; ".join(self.evidence) if self.evidence else "no evidence either way"
        return f"inferred from the session (confidence {self.confidence:.2f}): {said}"


def from_steps(
    steps: Sequence[dict[str, Any]],
    *,
    interrupted: bool,
    check_of: Callable[[str], str | None],
    resumed: bool = False,
) -> Inferred:
    """The outcome a turn's steps (learning steps: action and status) point to; `resumed`:
    the turn was cut short and the user's next words asked the agent to go on."""
    actions = [str(s.get("action") or "") for s in steps]
    ok = [s.get("status", "ok") == "ok" for s in steps]
    unresolved = [
        i for i, a in enumerate(actions) if not ok[i] and not any(ok[j] for j in _later(actions, i))
    ]
    checks = [i for i, a in enumerate(actions) if check_of(a) is not None]
    if interrupted and resumed:
        return Inferred(UNKNOWN, 0.0, [RESUMED])
    if interrupted:
        return Inferred(FAILURE, INTERRUPTED, [CUT_SHORT])
    if checks:
        last = checks[-1]
        what = f"{check_of(actions[last])} command `{actions[last]}`"
        if not ok[last]:
            return Inferred(FAILURE, CHECK_FAILED, [f"the last {what} failed"])
        # A failure before the last passing check is what the check says of it (a wrong
        # command corrected by another, say); one after it is left as it failed.
        after = [i for i in unresolved if i > last]
        if after:
            return Inferred(
                FAILURE,
                UNRESOLVED,
                [f"the last {what} passed", f"`{actions[after[-1]]}` then failed"],
            )
        return Inferred(SUCCESS, CHECK_PASSED, [f"the last {what} passed"])
    if unresolved:
        failed = actions[unresolved[-1]]
        return Inferred(FAILURE, UNRESOLVED, [f"`{failed}` failed and was not fixed"])
    return Inferred(UNKNOWN, 0.0, [])


def _later(actions: Sequence[str], i: int) -> list[int]:
    return [j for j in range(i + 1, len(actions)) if actions[j] == actions[i]]


def from_reply(text: str, *, same_work: bool = False, cut_short: bool = False) -> Inferred | None:
    """What the user's next prompt says of the turn before (None: it says nothing);
    `same_work`: the prompt asks for the same kind of work, so plainer complaints count;
    `cut_short`: the user interrupted that turn, and asking the agent to go on withdraws
    the interruption's failure (the outcome is then unknown: the next turn tells)."""
    head = text.strip()[:300]
    negative = _NEGATIVE.search(head) or (same_work and _NEGATIVE_SAME_WORK.search(head))
    positive = _POSITIVE.search(head)
    if negative and not (positive and positive.start() < negative.start()):
        return Inferred(FAILURE, REPLY, [f'the user then said "{_quote(head)}"'])
    if positive:
        return Inferred(SUCCESS, REPLY, [f'the user then said "{_quote(head)}"'])
    if cut_short and _CARRY_ON.search(head):
        return Inferred(UNKNOWN, 0.0, [RESUMED])
    return None


def carries_on(text: str) -> bool:
    """Whether the user's words, after they interrupted the agent, ask it to go on and
    judge nothing ("sorry, hit esc by accident, carry on", "continue")."""
    reply = from_reply(text, cut_short=True)
    return reply is not None and reply.outcome == UNKNOWN


def _quote(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 80 else line[:77] + "..."


def revised(before: Inferred, reply: Inferred | None) -> Inferred | None:
    """The turn's outcome once the user replied (None: no change). The user's words
    outweigh the session's evidence; when they agree, the confidence rises."""
    if reply is None:
        return None
    if reply.outcome == before.outcome:
        confidence = max(before.confidence, reply.confidence) + 0.05
        return Inferred(before.outcome, min(0.97, confidence), [*before.evidence, *reply.evidence])
    return reply
