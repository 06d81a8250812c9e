"""A recall's answer as the agent sees it: the chosen memories with their modes, reasons
and inclusion probabilities, built from the logged action, the same for a new recall
and for the replay of one made under an Idempotency-Key."""

from __future__ import annotations

from typing import Any, NamedTuple

from app.schemas.recall import (
    PolicyRef,
    RecalledMemory,
    RecallResponse,
    RetrievalInfo,
    SuppressedMemory,
)

_REASONS = {
    "constraint": "constraint: a rule to respect (type or sensitivity, criticality >= 0.7)",
    "context": "context: relevant to the task",
    "background": "background: past episode or reflection of lower criticality",
    "reverify_before_use": "quarantined: re-verify before relying on it",
}


class Shown(NamedTuple):
    """What a recall's answer shows of a chosen memory."""

    type: str
    content: str
    scope: dict[str, str]
    token_estimate: int
    metadata: dict[str, Any]
    score: float


def answer(
    recall_id: str,
    *,
    token_budget: int,
    action: dict[str, Any],
    propensity: float,
    policy: PolicyRef,
    memories: dict[str, Shown],
    retrieval: dict[str, Any] | None = None,
) -> RecallResponse:
    """A recall's answer from its logged action and the memories it chose, and how its
    candidates were searched (`retrieval`, from the logged state)."""
    order: list[str] = action["selected"]
    inclusion: dict[str, float] = action["inclusion"]
    selected = []
    for cid in order:
        memory = memories[cid]
        mode = action["modes"][cid]
        reason = _REASONS[mode]
        if action["explored"] and cid == order[-1]:
            reason += " (explored)"
        selected.append(
            RecalledMemory(
                memory_id=cid,
                type=memory.type,
                content=memory.content,
                scope=memory.scope,
                mode=mode,
                score=round(memory.score, 6),
                reason=reason,
                probability=inclusion[cid],
                token_estimate=memory.token_estimate,
                metadata=memory.metadata,
            )
        )
    suppressed = [
        SuppressedMemory(memory_id=cid, reason=reason, probability=inclusion[cid])
        for cid, reason in action["suppressed"].items()
    ]
    return RecallResponse(
        recall_id=recall_id,
        retrieval=RetrievalInfo.model_validate(retrieval or {"mode": "lexical"}),
        policy=policy,
        token_budget=token_budget,
        tokens_used=sum(memories[cid].token_estimate for cid in order),
        selected=selected,
        suppressed=suppressed,
        propensity=propensity,
    )
