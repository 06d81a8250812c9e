"""The recall policies' decision: hard rules, a greedy budget fill, logged exploration.

Pure: candidates and settings in, a decision out, with the exact probability of what
was chosen, so an offline evaluator can reweight logged decisions. `plan` gives the whole
distribution (the greedy selection and every exploration move), `decide` draws from it.

baseline_v0 is this module with its rule order; a learned policy is the same module given
each candidate's predicted reward gain (app/learning/bandit.py): the hard rules, the
constraints first and the exploration are the same, only the order of the soft picks
differs, and a soft pick with no predicted gain (at most -floor: the model's margin) is
left out.

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

Exploration ("epsilon move"): with probability epsilon, one soft pick (not constraint
mode) that can move is chosen uniformly, and either replaced by one feasible unselected
eligible candidate or, when there are other soft picks and the budget or k left a
candidate out, left out, uniformly among those options. A replacement is feasible when
the selection still fits the budget with it. So:
- P(greedy selection) = 1 - epsilon (1 when no pick can move);
- P(i replaced by j) = P(i left out) = epsilon / |A| / |O(i)|, where A is the set of soft
  picks that can move and O(i) the options of i (its feasible replacements, and leaving
  it out when there are two soft picks or more and a candidate was left out);
- inclusion probabilities follow from the same sums, and are logged per candidate.
Leaving a pick out is what lets an evaluator judge a policy that selects fewer memories.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field

POLICY_ID = "baseline_v0"
# 2: specificity ranks after criticality; 3: exploration may also leave a soft pick out.
POLICY_VERSION = 3
CRITICAL = 0.7
SUPPRESSED_STATUSES = {
    "deleted": "deleted",
    "expired": "expired",
    "superseded": "superseded by a newer version",
    "contradicted": "contradicted",
}
OVER_K = "over k"
OVER_BUDGET = "over the token budget"
NO_GAIN = "no predicted gain"
UNREACHED = "never within the baseline's reach"
EXPLORED_OUT = "left out to explore"
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


@dataclass(frozen=True)
class Moves:
    """The exploration moves of one soft pick: `out` left out, and one of `into` (or, if
    `drop`, nothing) taken instead, each of those options with `probability`."""

    out: str
    into: list[str]
    drop: bool
    probability: float

    def options(self) -> list[str | None]:
        return [*self.into, None] if self.drop else list(self.into)


@dataclass
class Plan:
    """Every selection a policy can make for one request, with its probability."""

    greedy: list[tuple[Candidate, str]]  # (candidate, mode) in priority order
    rest: list[tuple[Candidate, str]]  # eligible, not in the greedy selection
    moves: list[Moves]  # by soft pick, in id order
    epsilon: float  # the probability of exploring (0 when there is no soft pick)
    suppressed: dict[str, str]  # hard-rule suppressions: id -> reason
    skipped: dict[str, str] = field(default_factory=dict)  # soft picks a learned policy left out

    def selections(self) -> list[tuple[frozenset[str], float]]:
        """(selection, probability) of the greedy selection and of every move."""
        greedy = frozenset(c.memory_id for c, _ in self.greedy)
        found = [(greedy, 1.0 - self.epsilon)]
        for m in self.moves:
            taken = greedy - {m.out}
            found.extend((taken | {j} if j else taken, m.probability) for j in m.options())
        return found

    def reach(self) -> set[str]:
        """What it selects or may explore."""
        return {c.memory_id for c, _ in self.greedy}.union(*(m.into for m in self.moves))

    def inclusion(self) -> dict[str, float]:
        probs = {c.memory_id: 1.0 for c, _ in self.greedy} | {
            c.memory_id: 0.0 for c, _ in self.rest
        }
        for m in self.moves:
            probs[m.out] -= m.probability * len(m.options())
            for j in m.into:
                probs[j] += m.probability
        return {cid: max(0.0, min(1.0, p)) for cid, p in probs.items()}


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


def plan(
    candidates: list[Candidate],
    *,
    token_budget: int,
    k: int,
    max_sensitivity: str,
    epsilon: float,
    gains: Mapping[str, float] | None = None,
    reach: set[str] | None = None,
    floor: float = 0.0,
) -> Plan:
    """The policy's distribution: baseline_v0's, or with `gains` (memory id -> predicted
    reward gain) a learned policy's, which ranks the soft picks by gain and selects only
    within `reach` (baseline_v0's for the same request, computed when not given)."""
    suppressed: dict[str, str] = {}
    eligible: list[tuple[Candidate, str]] = []
    ceiling = SENSITIVITY_LEVELS.index(max_sensitivity)
    for c in candidates:
        if c.status in SUPPRESSED_STATUSES:
            suppressed[c.memory_id] = SUPPRESSED_STATUSES[c.status]
        elif SENSITIVITY_LEVELS.index(c.sensitivity) > ceiling:
            suppressed[c.memory_id] = (
                f"{c.sensitivity} sensitivity; the request allows up to {max_sensitivity}"
            )
        else:
            eligible.append((c, rule_mode(c)))
    if gains is None:
        eligible.sort(key=lambda cm: _priority(*cm))
    else:
        # Constraints first in the rules' order (a hard rule), then the soft picks by gain.
        eligible.sort(key=lambda cm: _priority(*cm) if cm[1] == "constraint" else (1.0,))
        eligible.sort(key=lambda cm: 0.0 if cm[1] == "constraint" else -gains[cm[0].memory_id])

    if gains is not None and reach is None:
        # A learned policy selects only what baseline_v0 selects or may explore for the
        # same request, so that logs of either can judge it (app/learning/offpolicy.py).
        reach = plan(
            candidates, token_budget=token_budget, k=k, max_sensitivity=max_sensitivity, epsilon=1.0
        ).reach()
    chosen: list[tuple[Candidate, str]] = []
    skipped: dict[str, str] = {}
    used = 0
    for c, mode in eligible:
        if gains is not None and reach is not None and mode != "constraint":
            if c.memory_id not in reach:
                skipped[c.memory_id] = UNREACHED
                continue
            if gains[c.memory_id] <= -floor:
                skipped[c.memory_id] = NO_GAIN
                continue
        if len(chosen) < k and used + c.token_cost <= token_budget:
            chosen.append((c, mode))
            used += c.token_cost
    chosen_ids = {c.memory_id for c, _ in chosen}
    rest = [(c, m) for c, m in eligible if c.memory_id not in chosen_ids]

    soft = [c for c, mode in chosen if mode != "constraint"]
    # A pick may be left out only beside another soft pick (the sole one is only replaced),
    # and only when the rules left something out too: when every candidate fits, the
    # selection is what the agent asked for, and exploration leaves it alone.
    drop = len(soft) >= 2 and bool(rest)
    options: list[tuple[str, list[str]]] = []
    for c in sorted(soft, key=lambda c: c.memory_id):
        room = token_budget - used + c.token_cost
        feasible = [
            j.memory_id
            for j, jm in rest
            if jm != "constraint"
            and j.token_cost <= room
            and (reach is None or j.memory_id in reach)
        ]
        if feasible or drop:
            options.append((c.memory_id, feasible))
    eps = epsilon if options else 0.0
    moves = [
        Moves(out, into, drop, eps / len(options) / (len(into) + drop)) for out, into in options
    ]
    return Plan(chosen, rest, moves, eps, suppressed, skipped)


def decide(
    candidates: list[Candidate],
    *,
    token_budget: int,
    k: int,
    max_sensitivity: str,
    epsilon: float,
    rng: random.Random,
    gains: Mapping[str, float] | None = None,
    floor: float = 0.0,
) -> Decision:
    p = plan(
        candidates,
        token_budget=token_budget,
        k=k,
        max_sensitivity=max_sensitivity,
        epsilon=epsilon,
        gains=gains,
        floor=floor,
    )
    decision = Decision(suppressed=dict(p.suppressed), inclusion=p.inclusion())
    decision.eligible = [c.memory_id for c in candidates if c.memory_id not in p.suppressed]
    chosen, rest = list(p.greedy), list(p.rest)
    decision.propensity = 1.0 - p.epsilon
    if p.epsilon and rng.random() < p.epsilon:
        moves = rng.choice(p.moves)
        into_id = rng.choice(moves.options())
        out_id = moves.out
        decision.propensity = moves.probability
        decision.explored = True
        out = next(cm for cm in chosen if cm[0].memory_id == out_id)
        chosen.remove(out)
        if into_id is not None:
            into = next(cm for cm in rest if cm[0].memory_id == into_id)
            rest.remove(into)
            chosen.append(into)
        decision.suppressed[out_id] = EXPLORED_OUT
    over_k = len(chosen) >= k
    for c, mode in chosen:
        decision.modes[c.memory_id] = mode
        decision.order.append(c.memory_id)
    for c, _ in rest:
        if c.memory_id in p.skipped:
            decision.suppressed[c.memory_id] = p.skipped[c.memory_id]
        else:
            decision.suppressed[c.memory_id] = OVER_K if over_k else OVER_BUDGET
    for cid in decision.suppressed:
        decision.inclusion.setdefault(cid, 0.0)
    return decision
