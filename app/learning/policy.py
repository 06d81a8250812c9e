"""The recall policy baseline_v0: hard rules, a greedy budget fill, logged exploration.

Pure: candidates and settings in, a decision out, with the exact probability of what
was chosen, so an offline evaluator can reweight logged decisions.

Hard rules (never randomised):
- deleted, expired, superseded and contradicted memories are suppressed;
- memories more sensitive than the request allows are suppressed (restricted ones
  are returned only to a request that allows restricted);
- quarantined memories can only come back as reverify_before_use;
- constraints, and high or restricted sensitivity memories, with criticality >= 0.7 are
  constraint mode; episodes and reflections with criticality < 0.7 are background; the
  rest are context.
Greedy fill: candidates in priority order (constraint mode first, then criticality,
specificity, expected utility, retrieval score, confidence) are taken while they fit the
token budget and k. Specificity is how many of the request's scope ids the memory is
scoped to: a skill learned for the task's language comes before the general one.

Exploration ("epsilon swap"): with probability epsilon, one soft pick (not constraint
mode) that has at least one feasible replacement is chosen uniformly, and replaced by
one feasible unselected eligible candidate chosen uniformly. A replacement is feasible
when the selection still fits the budget with it. So:
- P(greedy selection) = 1 - epsilon (1 when nothing can be swapped);
- P(selection with i swapped for j) = epsilon / |A| / |F(i)|, where A is the set of
  swappable picks and F(i) the feasible replacements of i;
- inclusion probabilities follow from the same sums, and are logged per candidate.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

POLICY_ID = "baseline_v0"
POLICY_VERSION = 2  # 2: specificity ranks after criticality
CRITICAL = 0.7
SUPPRESSED_STATUSES = {
    "deleted": "deleted",
    "expired": "expired",
    "superseded": "superseded by a newer version",
    "contradicted": "contradicted",
}
MODES = ("constraint", "context", "background", "reverify_before_use")
SENSITIVITY_LEVELS = ("low", "medium", "high", "restricted")


@dataclass(frozen=True)
class Candidate:
    memory_id: str
    type: str
    status: str
    sensitivity: str
    criticality: float
    confidence: float
    retrieval_score: float
    expected_utility: float
    token_cost: int
    specificity: int = 0  # scope ids (but level) the memory holds, all matching the request


@dataclass
class Decision:
    modes: dict[str, str] = field(default_factory=dict)  # selected id -> mode
    suppressed: dict[str, str] = field(default_factory=dict)  # id -> reason
    inclusion: dict[str, float] = field(default_factory=dict)  # id -> P(selected)
    propensity: float = 1.0  # P(this exact selection)
    explored: bool = False
    order: list[str] = field(default_factory=list)  # selected ids, in priority order
    eligible: list[str] = field(default_factory=list)  # passed the hard rules


def rule_mode(c: Candidate) -> str:
    if c.status == "quarantined":
        return "reverify_before_use"
    sensitive = c.sensitivity in ("high", "restricted")
    if (c.type == "constraint" or sensitive) and c.criticality >= CRITICAL:
        return "constraint"
    if c.type in ("episode", "reflection") and c.criticality < CRITICAL:
        return "background"
    return "context"


def _priority(c: Candidate, mode: str) -> tuple[float, ...]:
    return (
        0.0 if mode == "constraint" else 1.0,
        -c.criticality,
        -c.specificity,
        -c.expected_utility,
        -c.retrieval_score,
        -c.confidence,
    )


def decide(
    candidates: list[Candidate],
    *,
    token_budget: int,
    k: int,
    max_sensitivity: str,
    epsilon: float,
    rng: random.Random,
) -> Decision:
    decision = Decision()
    eligible: list[tuple[Candidate, str]] = []
    ceiling = SENSITIVITY_LEVELS.index(max_sensitivity)
    for c in candidates:
        if c.status in SUPPRESSED_STATUSES:
            decision.suppressed[c.memory_id] = SUPPRESSED_STATUSES[c.status]
        elif SENSITIVITY_LEVELS.index(c.sensitivity) > ceiling:
            decision.suppressed[c.memory_id] = (
                f"{c.sensitivity} sensitivity; the request allows up to {max_sensitivity}"
            )
        else:
            eligible.append((c, rule_mode(c)))
            decision.eligible.append(c.memory_id)
    eligible.sort(key=lambda cm: _priority(*cm))

    chosen: list[tuple[Candidate, str]] = []
    used = 0
    for c, mode in eligible:
        if len(chosen) < k and used + c.token_cost <= token_budget:
            chosen.append((c, mode))
            used += c.token_cost
    chosen_ids = {c.memory_id for c, _ in chosen}
    rest = [(c, m) for c, m in eligible if c.memory_id not in chosen_ids]

    # Feasible swaps: a soft pick i may give way to an unselected j that fits in its place.
    swaps: dict[str, list[tuple[Candidate, str]]] = {}
    for c, mode in chosen:
        if mode == "constraint":
            continue
        room = token_budget - used + c.token_cost
        feasible = [(j, jm) for j, jm in rest if jm != "constraint" and j.token_cost <= room]
        if feasible:
            swaps[c.memory_id] = feasible
    probs = {c.memory_id: 1.0 for c, _ in chosen} | {c.memory_id: 0.0 for c, _ in rest}
    eps = epsilon if swaps else 0.0
    for out_id, feasible in swaps.items():
        p_pair = eps / len(swaps) / len(feasible)
        probs[out_id] -= eps / len(swaps)
        for j, _ in feasible:
            probs[j.memory_id] += p_pair

    decision.propensity = 1.0 - eps
    if eps and rng.random() < eps:
        out_id = rng.choice(sorted(swaps))
        j, jm = rng.choice(swaps[out_id])
        decision.propensity = eps / len(swaps) / len(swaps[out_id])
        decision.explored = True
        chosen = [(c, m) for c, m in chosen if c.memory_id != out_id] + [(j, jm)]
        rest = [(c, m) for c, m in rest if c.memory_id != j.memory_id]
        rest.append(next((c, m) for c, m in eligible if c.memory_id == out_id))

    for c, mode in chosen:
        decision.modes[c.memory_id] = mode
        decision.order.append(c.memory_id)
    for c, _ in rest:
        over_k = len(chosen) >= k
        decision.suppressed[c.memory_id] = "over k" if over_k else "over the token budget"
    decision.inclusion = {cid: max(0.0, min(1.0, p)) for cid, p in probs.items()}
    for cid in decision.suppressed:
        decision.inclusion.setdefault(cid, 0.0)
    return decision
