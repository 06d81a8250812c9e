"""A world where only the kind of task tells the helpful memories from the harmful ones
(pure, seeded; no I/O): the learned policy must learn a task kind x memory type
interaction, and nothing else separates the memories.

Every task is asked in the same words, so recall finds all of the NOTES memories for
every task; half of them are facts and half preferences. For a task of the first kind
(its task type, also named in the request's scope) the facts help and the preferences
hurt; for the second, the other way round. The memories' criticality, confidence and
length are drawn the same way for both types, and each is as often helpful as harmful
over the two kinds, so its mean reward is the same as any other's: only the type *for
the kind* says which to pick.

A recall's reward is 1 (the task succeeded) with probability 0.5 plus EFFECT per helpful
memory selected, less EFFECT per harmful one (held within 0.02 and 0.98), else 0; its true
value is that probability. baseline_v0 (criticality first) selects the same handful for
both kinds, about as many of each type: about 0.5. A policy that selects only the helpful
type for the kind: about 0.95.

`KindWorld(seed, inert=True)` is the same world whose memories change nothing: every
reward is a fair coin, so no policy is better than another.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bench.policyworld import memory_body

NOTES = 24
BUDGET = 300
K = 8
TOKENS = (34, 40)  # a note's length: seven fit in the budget
EFFECT = 0.065
KINDS = ("checkout-ui", "checkout-api")
TYPES = ("fact", "preference")
TASK = "fix the checkout totals bug"
FILLER = (
    "noted earlier review thread owner team weekly kept draft summary handover board "
    "ticket sprint follow later agreed channel meeting notebook wiki"
).split()


@dataclass(frozen=True)
class Note:
    id: str
    type: str
    content: str
    criticality: float
    confidence: float

    def body(self) -> dict[str, Any]:
        return memory_body(self)


class KindWorld:
    """Two kinds of one task; which memory type helps depends on the kind."""

    shifted = False  # (the drive's seeds name the world by it)

    def __init__(self, seed: int, *, inert: bool = False) -> None:
        self.seed = seed
        self.inert = inert
        self.budget = BUDGET
        self.k = K
        rng = random.Random(f"kindworld-{seed}")
        self.notes: dict[str, Note] = {}
        for i in range(NOTES):
            tokens = rng.randint(*TOKENS)
            words = [*TASK.split()[1:4]]
            while len(" ".join(words)) < 4 * tokens:
                words.append(rng.choice(FILLER))
            note = Note(
                id=f"kw-{seed}-{i}",
                type=TYPES[i % 2],
                content=" ".join(words)[: 4 * tokens],
                criticality=round(rng.uniform(0.3, 0.6), 3),
                confidence=round(rng.uniform(0.6, 0.9), 3),
            )
            self.notes[note.id] = note
        self.task_types = list(KINDS)

    def memory_bodies(self) -> list[dict[str, Any]]:
        return [n.body() for n in self.notes.values()]

    def recall_body(self, kind: str) -> dict[str, Any]:
        return {
            "task": TASK,
            "task_type": kind,
            "scope": {"kind": kind},
            "token_budget": self.budget,
            "k": self.k,
        }

    def sample(self, rng: random.Random) -> str:
        return rng.choice(KINDS)

    def helps(self, note_id: str, kind: str) -> int:
        """+1 when the note helps a task of this kind, -1 when it hurts, 0 for another id."""
        note = self.notes.get(note_id)
        if note is None or self.inert:
            return 0
        return 1 if (note.type == TYPES[0]) == (kind == KINDS[0]) else -1

    def task_value(self, kind: str, selected: Iterable[str]) -> float:
        """The chance of success of a task of this kind given the selection."""
        effect = sum(self.helps(i, kind) for i in selected) * EFFECT
        return min(0.98, max(0.02, 0.5 + effect))

    def task_reward(self, kind: str, selected: Iterable[str], rng: random.Random) -> float:
        return 1.0 if rng.random() < self.task_value(kind, list(selected)) else 0.0

    def best_value(self) -> float:
        """What picking only the helpful type (as many as fit) is worth."""
        fit = min(self.k, self.budget // TOKENS[1])
        return min(0.98, 0.5 + fit * EFFECT) if not self.inert else 0.5
