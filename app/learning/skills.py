"""Skill evolution (pure): derive a procedure from recent episodes, measure one, and
decide retirement, merging and specialisation.

A procedure is derived from the successful episodes of a window (the latest episodes
of a task type): its steps are the actions present in at least `step_share` of them,
ordered by how often each comes before the others (the successes done right the first
time count most); a step's `on_error` is the action
that most often followed its failures in successful episodes. It is then measured on
the whole window: support (episodes that performed its steps in order), success rate,
mean reward and the Wilson lower bound of the success rate. Its optional steps, what most
successes did that the procedure does not need (a habit such as committing at the end),
are shown in their place and never required.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from app.learning.habits import firsts, places_of_habits
from app.learning.mining import wilson_lcb, wilson_ucb

MAX_EVIDENCE = 20
NEEDED_RATIO = 0.5
Z90 = 1.2816  # a one-sided 90% bound
FIRST_TIME_WEIGHT = 10  # a success done right the first time, to one repaired, in ordering


@dataclass(frozen=True, slots=True)
class EpisodeView:
    id: str
    actions: tuple[str, ...]
    statuses: tuple[str, ...]
    success: bool
    reward: float
    context: tuple[tuple[str, str], ...] = ()  # (key, text) fields (app/learning/contexts.py)
    skills: tuple[str, ...] = ()
    # An agent's task that failed in one turn and was put right in a later one (steps.py).
    repaired: bool = False
    # Where each turn after the first begins in `actions` (an agent's turns, merged).
    turns: tuple[int, ...] = ()
    # The steps of the skills it followed (as they are now): its order among them is
    # theirs, not the agent's.
    shown: frozenset[str] = frozenset()

    def turn_of(self, index: int) -> int:
        """The turn (0 for the first) the action at `index` was done in."""
        return sum(1 for start in self.turns if start <= index)

    def performed(self, steps: Sequence[str]) -> bool:
        """Whether the episode did the steps in order. A task put right in a later turn
        did them in order when it did them all and, within each turn, in order: the
        fix's steps come after the failed turn's wherever they belong."""
        if not self.repaired or not self.turns:
            return contains_in_order(self.actions, steps)
        if not set(steps) <= set(self.actions):
            return False
        bounds = (0, *self.turns, len(self.actions))
        for start, end in zip(bounds, bounds[1:], strict=False):
            turn = self.actions[start:end]
            if not contains_in_order(turn, [s for s in steps if s in turn]):
                return False
        return True


@dataclass(frozen=True, slots=True)
class Procedure:
    steps: tuple[str, ...]  # what it needs, in order: what it is matched and measured by
    on_error: dict[str, str] = field(default_factory=dict)
    support: int = 0
    successes: int = 0
    mean_reward: float | None = None
    lcb: float = 0.0
    evidence: tuple[str, ...] = ()
    # The steps as they are shown: `steps` with the optional ones in their place (empty:
    # none are optional).
    shown: tuple[str, ...] = ()

    @property
    def success_rate(self) -> float:
        return self.successes / self.support if self.support else 0.0

    @property
    def optional(self) -> frozenset[str]:
        return frozenset(self.shown) - frozenset(self.steps)


def contains_in_order(actions: Sequence[str], steps: Sequence[str]) -> bool:
    """True when `steps` is a subsequence of `actions` (other actions may come between)."""
    it = iter(actions)
    return all(step in it for step in steps)


def measure(
    steps: Sequence[str], window: Sequence[EpisodeView], *, on_error: dict[str, str] | None = None
) -> Procedure:
    """How the episodes that performed these steps in order fared."""
    hits = [e for e in window if e.performed(steps)]
    wins = [e for e in hits if e.success]
    mean = sum(e.reward for e in hits) / len(hits) if hits else None
    return Procedure(
        steps=tuple(steps),
        on_error=dict(on_error or {}),
        support=len(hits),
        successes=len(wins),
        mean_reward=mean,
        lcb=wilson_lcb(len(wins), len(hits)),
        evidence=tuple(e.id for e in wins[-MAX_EVIDENCE:]),
    )


def _order(steps: set[str], wins: Sequence[EpisodeView]) -> tuple[str, ...]:
    """The steps by how often each came before the others in the successes. A task done
    right the first time counts FIRST_TIME_WEIGHT times one put right in a later turn,
    which shows what was missing, not where it goes (the fix comes after the rest), and
    two steps a skill it followed showed in that order (its echo) count once: the first
    decide the order, the others place what they lack, a task put right by the order
    within each of its turns only."""
    before: Counter[tuple[str, str]] = Counter()
    position: Counter[str] = Counter()
    for e in wins:
        weight = 1 if e.repaired else FIRST_TIME_WEIGHT
        first = firsts(e)
        for a in steps:
            position[a] += weight * first.get(a, len(e.actions))
            for b in steps:
                if a != b and a in first and b in first and first[a] < first[b]:
                    # A step of the fix after one of the failed turn is no order.
                    if not e.repaired or e.turn_of(first[a]) == e.turn_of(first[b]):
                        echo = a in e.shown and b in e.shown
                        before[(a, b)] += 1 if echo else weight
    score = {a: sum(1 for b in steps if before[(a, b)] > before[(b, a)]) for a in steps}
    return tuple(sorted(steps, key=lambda a: (-score[a], position[a], a)))


def recoveries_of(steps: Sequence[str], wins: Sequence[EpisodeView]) -> dict[str, str]:
    """For each step, the action that most often came right after its failure (twice at least)."""
    seen: dict[str, Counter[str]] = {s: Counter() for s in steps}
    for e in wins:
        for i, (action, status) in enumerate(zip(e.actions, e.statuses, strict=True)):
            if status != "ok" and action in seen and i + 1 < len(e.actions):
                seen[action][e.actions[i + 1]] += 1
    out = {}
    for step, counts in seen.items():
        if counts:
            fix, n = counts.most_common(1)[0]
            if n >= 2 and fix != step:
                out[step] = fix
    return out


def _needed(action: str, unguided: Sequence[EpisodeView], *, min_support: int) -> bool:
    """Whether episodes that followed no skill succeed clearly less often without the
    action (at most NEEDED_RATIO of the rate with it); True when too few lack it to tell,
    and while the rate without it could still be that low (its 90% lower bound)."""
    without = [e for e in unguided if action not in e.actions]
    with_it = [e for e in unguided if action in e.actions]
    # None without it is too few to tell, whatever min_support says.
    if len(without) < max(1, min_support) or not with_it:
        return True
    rate_with = sum(e.success for e in with_it) / len(with_it)
    # Not needed only when even the rate without it is more than NEEDED_RATIO of the
    # rate with it (by a one-sided 90% lower bound): a handful of episodes proves nothing.
    wins_without = sum(e.success for e in without)
    return wilson_lcb(wins_without, len(without), z=Z90) <= NEEDED_RATIO * rate_with


def derive(
    window: Sequence[EpisodeView],
    *,
    min_support: int,
    step_share: float,
    habit_share: float | None = None,
    fixes: Mapping[str, str] | None = None,
) -> Procedure | None:
    """The procedure the window's successful episodes share, measured on the window.

    A step is an action present in at least `step_share` of the successes that is also
    needed: among episodes whose agent followed no skill (so did not act on a skill's
    say-so), those without it succeed at most half as often as those with it. An action
    present by chance, or one that only helps now and then, does not make the procedure.
    An action known to recover a chosen step's failures (`fixes`: failed action -> the
    action that recovered it) is that step's `on_error`, not a step of its own. Until one
    success was done right the first time there is no procedure: tasks put right in a
    later turn show what was needed, not in what order.

    An action done (and not failed) in at least `habit_share` of the successes, nearly
    always at the same place among the steps (`step_share` of the times), that is not a
    step is an optional one: shown there, never required (by the support, or of a
    follower).
    """
    wins = [e for e in window if e.success]
    if len(wins) < min_support or all(e.repaired for e in wins):
        return None  # (every success put right in a later turn: no order to go by yet)
    present: Counter[str] = Counter()
    for e in wins:
        present.update(set(e.actions))
    unguided = [e for e in window if not e.skills]
    chosen = {
        a
        for a, n in present.items()
        if n >= step_share * len(wins) and _needed(a, unguided, min_support=min_support)
    }
    known = {a: fix for a, fix in (fixes or {}).items() if a in chosen and fix != a}
    chosen -= set(known.values())
    if not chosen:
        return None
    steps = _order(chosen, wins)
    on_error = {**recoveries_of(steps, wins), **{a: f for a, f in known.items() if a in chosen}}
    proc = measure(steps, window, on_error=on_error)
    habits = places_of_habits(wins, steps, habit_share, step_share) if habit_share else {}
    for fixed in known.values():
        habits.pop(fixed, None)
    if not habits:
        return proc
    shown: list[str] = []
    for slot in range(len(steps) + 1):
        shown.extend(_order({h for h, at in habits.items() if at == slot}, wins))
        shown.extend(steps[slot : slot + 1])
    return replace(proc, shown=tuple(shown))


def unneeded(
    steps: Sequence[str], followers: Sequence[EpisodeView], *, min_support: int, margin: float = 0.1
) -> list[tuple[str, Procedure]]:
    """Steps that episodes following the skill left out and still succeeded about as often
    (at least `min_support` of them): what a similar successful episode did not need."""
    full = measure(steps, followers)
    found = []
    for step in steps:
        rest = [s for s in steps if s != step]
        without = measure(rest, [e for e in followers if step not in e.actions])
        if rest and without.support >= min_support:
            if without.success_rate >= full.success_rate - margin:
                found.append((step, without))
    return found


def jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa or sb else 1.0


@dataclass(frozen=True, slots=True)
class Split:
    """A context in which a procedure works and another in which it fails."""

    feature: tuple[str, str]  # e.g. ("domain", "web")
    good: Procedure
    bad_feature: tuple[str, str]
    bad: Procedure


def context_split(
    steps: Sequence[str],
    window: Sequence[EpisodeView],
    *,
    min_support: int,
    good_lcb: float,
    bad_below: float,
) -> Split | None:
    """A field value where the procedure works (lcb >= good_lcb) while another value
    of the same field makes it fail (upper bound < bad_below)."""
    by_feature: dict[tuple[str, str], list[EpisodeView]] = {}
    for e in window:
        for feature in e.context:
            by_feature.setdefault(feature, []).append(e)
    measured = {f: measure(steps, eps) for f, eps in sorted(by_feature.items())}
    for feature, good in measured.items():
        if good.support < min_support or good.lcb < good_lcb:
            continue
        for other, bad in measured.items():
            if other == feature or other[0] != feature[0] or bad.support < min_support:
                continue
            if wilson_ucb(bad.successes, bad.support) < bad_below:
                return Split(feature, good, other, bad)
    return None


def retire_reason(
    recent: Sequence[Mapping[str, Any]], *, after_uses: int, below: float
) -> str | None:
    """Why a skill should retire, judged on its latest `after_uses` uses (None: keep it)."""
    if len(recent) < after_uses:
        return None
    last = recent[-after_uses:]
    wins = sum(1 for r in last if r.get("success"))
    total = sum(float(r.get("reward") or 0.0) for r in last)
    if wins / len(last) < below:
        return f"succeeded in {wins} of its last {len(last)} uses (below {below:.0%})"
    if total <= 0:
        return f"earned no positive reward over its last {len(last)} uses (sum {total:.3f})"
    return None
