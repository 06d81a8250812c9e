"""The shapes of the agent world (bench/agentworld.py): projects, kinds of work, their steps.

Each kind is done the same way every time: its steps are shell commands and file edits
whose arguments change from one session to the next (the `{slots}` of its templates).
A step is `key` when leaving it out, or doing it out of order, breaks the result;
`known` is the chance that an agent who was never shown the procedure thinks of the
step on its own; a `check` step (tests, build, rollout) is where a broken result shows;
`fails` marks a step that fails when it works (reproducing a failing test). Its `wrong`
is a first try that fails and is then corrected. The last HELD_OUT prompts of each
kind are never asked in training: the probes ask them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

HELD_OUT = 3
Slots = dict[str, str]


@dataclass(frozen=True, slots=True)
class Step:
    tool: str  # "Bash" or "Edit"
    text: str  # Bash: the command; Edit: the file's path in the project
    key: bool = True
    known: float = 0.7
    check: bool = False
    ok: str = ""  # Bash: stdout when it works; Edit: the new text
    fail: str = ""  # Bash: what a check prints when the result is broken
    old: str = ""  # Edit: the text replaced
    wrong: str = ""  # a first try that fails ...
    wrong_error: str = ""  # ... with this error, before the right command
    fails: bool = False


@dataclass(frozen=True, slots=True)
class Kind:
    project: str
    name: str
    steps: tuple[Step, ...]
    prompts: tuple[str, ...]
    complaints: tuple[str, ...]
    slots: Callable[[random.Random], Slots]

    @property
    def training_prompts(self) -> tuple[str, ...]:
        return self.prompts[:-HELD_OUT]

    @property
    def held_out_prompts(self) -> tuple[str, ...]:
        return self.prompts[-HELD_OUT:]


@dataclass(frozen=True, slots=True)
class Project:
    name: str
    cwd: str
    kinds: tuple[Kind, ...]
    files: dict[str, str]  # what Read shows of a few files
    globs: tuple[tuple[str, tuple[str, ...]], ...]  # pattern, files found
    greps: tuple[tuple[str, tuple[str, ...]], ...]  # pattern, files that match
    looks: tuple[tuple[str, str], ...]  # shell commands that only look, and their output
    extras: tuple[tuple[str, str], ...]  # commands no procedure needs, and their output
    follow_ups: tuple[tuple[str, Step], ...]  # a small next request and its one step


def hex_digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def common_slots(rng: random.Random) -> Slots:
    """Slots every session has: test counts, timings, a commit, a date."""
    return {
        "n": str(rng.randint(40, 400)),
        "secs": f"{rng.uniform(0.8, 40):.2f}",
        "sha7": hex_digits(rng, 7),
        "date": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
    }


def version_slots(rng: random.Random) -> Slots:
    major, minor, patch = rng.randint(0, 4), rng.randint(0, 19), rng.randint(1, 12)
    return {"version": f"{major}.{minor}.{patch}", "prev": f"{major}.{minor}.{patch - 1}"}


THANKS = (
    "thanks, looks good", "great, thanks!", "perfect 👍", "nice, thank you", "looks good",
    "ty", "awesome thanks", "cool, that worked",
)  # fmt: skip
CARRY_ON = ("sorry, hit esc by accident, carry on", "continue", "go on please", "keep going")
INTERRUPTED = "[Request interrupted by user for tool use]"
PYTEST_OK = "........................................ [100%]\n{n} passed in {secs}s"
PYTEST_FAIL = (
    "FAILED tests/test_pricing.py::test_vat_rounding - AssertionError: "
    "assert Decimal('10.00') == Decimal('9.99')\n1 failed, {n} passed in {secs}s"
)
VITEST_OK = (
    " ✓ src/cart.test.ts (12 tests) 41ms\n\n Test Files  18 passed (18)\n      Tests  {n} passed"
)
VITEST_FAIL = (
    " ❯ src/api/client.test.ts (6 tests | 2 failed)\n\n Test Files  1 failed | 17 passed (18)\n"
    "      Tests  2 failed | {n} passed"
)


def commit_ok(message: str) -> str:
    return f"[main {{sha7}}] {message}\n 2 files changed, 9 insertions(+), 3 deletions(-)"


def not_found(command: str) -> str:
    return f"Exit code 127\n/bin/bash: line 1: {command}: command not found"
