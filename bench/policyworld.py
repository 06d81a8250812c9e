"""A simulated world for proving that a learned recall policy beats baseline_v0, and that
the off-policy evaluator can tell when it would not (pure, seeded; no I/O).

Each task type has a pool of notes (memories) that all share words with the task, so
recall's search finds every one of them. Each note has a hidden effect on the reward of a
recall that selects it: helpful (+), neutral (0) or harmful (-, a stale note). A recall's
reward is BASE plus the selected notes' effects plus Gaussian noise; its true value is the
same without the noise.

A pool is laid out so that baseline_v0's order (criticality first) falls for a stale note:
- decoy: harmful; the highest criticality (below 0.7: never a hard constraint), every
  task word, the longest note;
- core (3): helpful; the next criticalities;
- hidden: helpful; a low criticality; fits in the decoy's place;
- neutral and stale notes: effect 0 and harmful; low criticalities; too long to join the
  core and the hidden note in the token budget; one of each fits in the decoy's place,
  the rest in no place.
Baseline's first choice is the decoy and the core; the best choice is the core and the
hidden note, one swap away, so baseline's exploration (an epsilon move) logs it now and
then. Only statistics tell the notes apart: confidence is drawn from overlapping ranges
per effect (helpful 0.7-0.95, neutral 0.5-0.8, harmful 0.3-0.6), and the memory type
from lists per effect that share a type (helpful notes are mostly facts and preferences,
neutral ones tool memories and document references, stale ones reflections and project
states).

The inert world (`PolicyWorld(seed, inert=True)`) is the same world whose notes change
nothing: every reward is the base plus noise, so no policy can be better than another.

The shifted world (`PolicyWorld(seed, shifted=True)`) is the same kind of world on other
tasks, where the low-confidence notes are the right ones: the decoy and the stale notes
help, and the confident hidden note is stale. A policy that learned "trust confident
notes, not the decoy" does worse there than baseline_v0.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

Role = Literal["decoy", "core", "hidden", "neutral", "stale"]
BUDGET = 300
K = 8
NOISE = 0.15
# A recall's value before its notes: rewards then stay within -1 and 1 but for a rare
# explored pick of two stale notes, the scale expected_utility assumes.
BASE = -0.5
HELPFUL = (0.2, 0.4)
HARMFUL = (-0.5, -0.3)
CONFIDENCE = {"helpful": (0.7, 0.95), "neutral": (0.5, 0.8), "harmful": (0.3, 0.6)}

# (task type, the task in words): four content words each, no word shared between tasks.
TASKS = [
    ("rotate-keys", "rotate vault signing keys"),
    ("deploy-billing", "deploy billing invoices service"),
    ("migrate-orders", "migrate orders postgres schema"),
    ("fix-login", "fix login redirect cookie"),
    ("tune-search", "tune search ranking synonyms"),
    ("backup-photos", "backup photo archive bucket"),
    ("upgrade-kernel", "upgrade kernel firmware drivers"),
    ("audit-payroll", "audit payroll ledger exports"),
    ("patch-mobile", "patch mobile android crash"),
    ("resize-cluster", "resize kafka cluster brokers"),
    ("renew-certs", "renew tls certificates expiry"),
    ("clean-logs", "clean stale logfiles disk"),
]
# Words of no task: the rest of a note's text.
FILLER = (
    "owner weekly thread window review channel kept earlier draft wiki summary follow "
    "later team board person handover meeting agreed quarter sprint ticket notebook"
).split()
# Memory types by effect, drawn uniformly: mostly the effect's own, one shared with another.
TYPES = {
    "helpful": ("fact", "fact", "preference", "preference", "tool_memory"),
    "neutral": ("tool_memory", "tool_memory", "document_reference", "document_reference", "fact"),
    "harmful": ("reflection", "reflection", "project_state", "project_state", "fact"),
}


def memory_body(note: Any) -> dict[str, Any]:
    """A note's `POST /v1/memories` body: its id, type, content, confidence, criticality."""
    return {
        "id": note.id,
        "type": note.type,
        "content": note.content,
        "confidence": note.confidence,
        "criticality": note.criticality,
    }


@dataclass(frozen=True)
class Note:
    """A memory of the world, with its hidden effect on the reward."""

    id: str
    task_type: str
    role: Role
    type: str
    content: str
    tokens: int
    criticality: float
    confidence: float
    effect: float

    def body(self) -> dict[str, Any]:
        """Its `POST /v1/memories` body (the effect stays hidden)."""
        return memory_body(self)


@dataclass(frozen=True)
class TaskType:
    name: str
    task: str
    notes: tuple[Note, ...]

    def role(self, role: Role) -> list[Note]:
        return [n for n in self.notes if n.role == role]


def text(words: list[str], tokens: int, rng: random.Random) -> str:
    """`words` then filler, exactly 4 * tokens characters: recall counts ceil(len / 4)."""
    parts = list(words)
    while len(" ".join(parts)) < 4 * tokens:
        parts.append(rng.choice(FILLER))
    out = " ".join(parts)[: 4 * tokens]
    return out[:-1] + "." if out.endswith(" ") else out


def _uniform(rng: random.Random, bounds: tuple[float, float]) -> float:
    return round(rng.uniform(*bounds), 3)


class PolicyWorld:
    """Task types with pools of notes; the true value and noisy reward of a selection."""

    def __init__(
        self,
        seed: int,
        *,
        task_types: int = 6,
        neutral: int = 3,
        stale: int = 2,
        shifted: bool = False,
        inert: bool = False,
        noise: float = NOISE,
        base: float = BASE,
    ) -> None:
        assert 1 <= task_types <= len(TASKS) // 2
        self.seed = seed
        self.shifted = shifted
        self.inert = inert
        self.noise = noise
        self.base = base
        self.budget = BUDGET
        self.k = K
        rng = random.Random(f"policyworld-{seed}-{shifted}")
        tasks = TASKS[len(TASKS) // 2 :] if shifted else TASKS[: len(TASKS) // 2]
        self.task_types = [
            self._pool(rng, name, task, neutral=neutral, stale=stale)
            for name, task in tasks[:task_types]
        ]
        self.notes = {n.id: n for t in self.task_types for n in t.notes}

    def _pool(
        self, rng: random.Random, name: str, task: str, *, neutral: int, stale: int
    ) -> TaskType:
        words = task.split()
        core_tokens = [rng.randint(60, 70) for _ in range(3)]
        left = rng.randint(0, 10)  # what the baseline leaves of the budget
        decoy_tokens = self.budget - sum(core_tokens) - left
        hidden_tokens = decoy_tokens - rng.randint(5, 15)
        # Nothing else fits beside the core and the hidden note (nor beside the decoy).
        room = self.budget - sum(core_tokens) - hidden_tokens
        low = rng.sample(range(100, 440), 1 + neutral + stale)  # distinct criticalities
        core_crit = rng.sample(range(450, 600), 3)
        neutrals: list[Role] = ["neutral"]
        stales: list[Role] = ["stale"]
        others = neutrals * neutral + stales * stale
        plan: list[tuple[Role, int, float, int]] = [
            ("decoy", decoy_tokens, rng.randint(620, 680) / 1000, len(words)),
            *(
                ("core", t, c / 1000, rng.randint(1, 3))
                for t, c in zip(core_tokens, core_crit, strict=True)
            ),
            ("hidden", hidden_tokens, low[0] / 1000, rng.randint(1, 3)),
            *(
                (
                    role,
                    self._tokens(rng, j, others, room=room, swap=left + decoy_tokens),
                    c / 1000,
                    rng.randint(1, 3),
                )
                for j, (role, c) in enumerate(zip(others, low[1:], strict=True))
            ),
        ]
        notes = []
        for i, (role, tokens, criticality, n_words) in enumerate(plan):
            kind = self._kind(role)
            effect = 0.0 if kind == "neutral" else _uniform(rng, HELPFUL)
            if kind == "harmful":
                effect = _uniform(rng, HARMFUL)
            if self.inert:
                effect = 0.0  # the notes look as they do elsewhere, and change nothing
            # The look of a note (its confidence, its type) follows the unshifted kind.
            looks = self._kind(role, shifted=False)
            notes.append(
                Note(
                    id=f"pw{int(self.shifted)}-{self.seed}-{name}-{i}",
                    task_type=name,
                    role=role,
                    type=rng.choice(TYPES[looks]),
                    content=text(rng.sample(words, n_words), tokens, rng),
                    tokens=tokens,
                    criticality=criticality,
                    confidence=_uniform(rng, CONFIDENCE[looks]),
                    effect=effect,
                )
            )
        return TaskType(name, task, tuple(notes))

    @staticmethod
    def _tokens(rng: random.Random, j: int, others: list[Role], *, room: int, swap: int) -> int:
        """The j-th other note's length: the first neutral and the first stale note may
        take the decoy's place (`swap` tokens) when the baseline explores, the rest are
        too long for any place. The fewer the options, the more often exploration logs
        the hidden note in the decoy's place, which is what the evaluator learns from."""
        if others.index(others[j]) == j:
            return rng.randint(max(30, room + 1), swap)
        return rng.randint(swap + 1, swap + 30)

    def _kind(self, role: Role, *, shifted: bool | None = None) -> str:
        shifted = self.shifted if shifted is None else shifted
        if role == "neutral":
            return "neutral"
        if role in ("decoy", "stale"):
            return "helpful" if shifted else "harmful"
        if role == "hidden":
            return "harmful" if shifted else "helpful"
        return "helpful"

    def task_type(self, name: str) -> TaskType:
        return next(t for t in self.task_types if t.name == name)

    def memory_bodies(self) -> list[dict[str, Any]]:
        return [n.body() for t in self.task_types for n in t.notes]

    def recall_body(self, name: str) -> dict[str, Any]:
        """The `POST /v1/recall` body of a task of this type."""
        task = self.task_type(name)
        return {"task": task.task, "task_type": name, "token_budget": self.budget, "k": self.k}

    def sample(self, rng: random.Random) -> str:
        """A task type, uniformly."""
        return rng.choice(self.task_types).name

    def value(self, selected: Iterable[str]) -> float:
        """The true value of a selection: the base and its notes' effects (ids of other
        memories count 0)."""
        return self.base + sum(self.notes[i].effect for i in selected if i in self.notes)

    def reward(self, selected: Iterable[str], rng: random.Random) -> float:
        return round(self.value(selected) + rng.gauss(0.0, self.noise), 6)

    def task_value(self, name: str, selected: Iterable[str]) -> float:
        """The true value of a selection for a task of this type (here: whatever the type)."""
        return self.value(selected)

    def task_reward(self, name: str, selected: Iterable[str], rng: random.Random) -> float:
        return self.reward(selected, rng)

    def first_choice(self, name: str) -> list[str]:
        """What baseline_v0 picks without exploring: the decoy and the core."""
        return [n.id for n in self.task_type(name).notes if n.role in ("decoy", "core")]

    def learned_choice(self, name: str) -> list[str]:
        """What a policy that learned the unshifted world picks: the core and the hidden note."""
        return [n.id for n in self.task_type(name).notes if n.role in ("core", "hidden")]

    def best(self, name: str) -> tuple[float, list[str]]:
        """The best selection under the budget and k, by brute force, and its value."""
        notes = self.task_type(name).notes
        best: tuple[float, list[str]] = (self.base, [])
        for r in range(1, min(self.k, len(notes)) + 1):
            for combo in itertools.combinations(notes, r):
                if sum(n.tokens for n in combo) <= self.budget:
                    v = self.base + sum(n.effect for n in combo)
                    if v > best[0] + 1e-9:
                        best = (v, [n.id for n in combo])
        return best

    def mean_value(self, choice: str) -> float:
        """The true value of `first_choice` or `learned_choice`, averaged over task types."""
        pick = self.first_choice if choice == "first" else self.learned_choice
        return sum(self.value(pick(t.name)) for t in self.task_types) / len(self.task_types)
