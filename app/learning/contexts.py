"""Contexts (pure): the fields of an episode's or a task's context, and the skills a task
type needs per context.

A context is a set of fields, each a (key, text) pair (mining.context_fields): `domain`, `language`,
`tag.<tag>` (always "true": a tag is there or not) and `features.<name>` (the feature's
value as text). Skill triggers, the scopes of skill memories and a recall's context use
the same keys, so a skill learned where `language=node` is handed to a task that says so.

Which context a procedure depends on is found from the window's successful episodes: the
partition of the window by one field, or by a pair of fields, whose groups' procedures
(each derived as `derive` derives the type's) tell successes from failures best: an
episode that performed its group's procedure in order counts for it if it succeeded and
against it if it failed. A partition is chosen when its groups' procedures differ and
it scores more than the single procedure of the whole window (a pair: more than either
field alone), so a field that changes nothing, or one step of a small group found by
chance, does not split a task type. Episodes without a value of the chosen fields are
the general group; where there is none, or too few of them succeeded, there is no
general procedure: the common part of the contexts' procedures is not a procedure that
works in any of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from app.learning.mining import field_text
from app.learning.skills import EpisodeView, Procedure, derive

Context = tuple[tuple[str, str], ...]  # sorted (key, text) pairs
# Fields considered, the most common first: pairs of them grow with the square.
MAX_FIELDS = 8
MAX_PAIR = 2


def describe_context(context: Mapping[str, str]) -> str:
    """`language=node, features.db=postgres` (a tag reads as `tag=ci`)."""
    return ", ".join(field_text(k, v) for k, v in sorted(context.items()))


def context_name(context: Mapping[str, str]) -> str:
    """The context in a skill's name: `node`, `python-postgres`, `ci` (a tag)."""
    return "-".join(k[4:] if k.startswith("tag.") else v for k, v in sorted(context.items()))


def in_context(episode: EpisodeView, context: Mapping[str, str]) -> bool:
    """Whether the episode happened in this context (every field of it, maybe more)."""
    fields = dict(episode.context)
    return all(fields.get(k) == v for k, v in context.items())


@dataclass(frozen=True, slots=True)
class ContextPlan:
    """The procedures a task type needs: one per context of the chosen fields, and the
    general one (for episodes without those fields) if it is supported."""

    fields: tuple[str, ...] = ()
    specific: dict[Context, Procedure] = field(default_factory=dict)
    general: Procedure | None = None
    score: int = 0


def _score(procs: Iterable[Procedure]) -> int:
    """Successes the procedures account for, less the failures they do not tell apart:
    an episode counts for the procedure of its group when it performed it in order."""
    return sum(2 * p.successes - p.support for p in procs)


def _candidate_fields(wins: Sequence[EpisodeView], *, min_support: int) -> list[str]:
    """Fields with values in at least `min_support` successes, the most common first."""
    seen: Counter[str] = Counter()
    for e in wins:
        seen.update(k for k, _ in e.context)
    common = [k for k, n in seen.items() if n >= min_support]
    return sorted(common, key=lambda k: (-seen[k], k))[:MAX_FIELDS]


def _partition(
    window: Sequence[EpisodeView],
    fields: tuple[str, ...],
    *,
    min_support: int,
    step_share: float,
    habit_share: float | None,
    fixes: Mapping[str, str] | None,
) -> ContextPlan | None:
    groups: dict[Context | None, list[EpisodeView]] = {}
    for e in window:
        values = dict(e.context)
        key = tuple((f, values[f]) for f in fields) if all(f in values for f in fields) else None
        groups.setdefault(key, []).append(e)
    supported = [g for g in groups.values() if sum(e.success for e in g) >= min_support]
    if len(supported) < 2:
        return None  # one group at most could have a procedure: nothing to compare
    procs: dict[Context | None, Procedure] = {}
    for key, group in groups.items():
        proc = derive(
            group, min_support=min_support, step_share=step_share, habit_share=habit_share,
            fixes=fixes,
        )  # fmt: skip
        if proc is not None:
            procs[key] = proc
    if len({p.steps for p in procs.values()}) < 2:
        return None  # one procedure whatever the value: the fields do not matter
    return ContextPlan(
        fields=fields,
        specific={k: p for k, p in procs.items() if k is not None},
        general=procs.get(None),
        score=_score(procs.values()),
    )


def plan(
    window: Sequence[EpisodeView],
    *,
    min_support: int,
    step_share: float,
    habit_share: float | None = None,
    fixes: Mapping[str, str] | None = None,
    detect_support: int | None = None,
) -> ContextPlan:
    """The procedures of a task type's window: per context where the context decides
    the procedure, else the one procedure of the whole window.

    Contexts are told apart from `detect_support` successes a group on (`min_support`
    by default), fewer than a skill needs: once the contexts' procedures are seen to
    differ, the part they share is no general procedure, even before each context has
    the successes its own skill needs (the caller holds each group to its threshold)."""
    general = derive(
        window, min_support=min_support, step_share=step_share, habit_share=habit_share,
        fixes=fixes,
    )  # fmt: skip
    wins = [e for e in window if e.success]
    best = ContextPlan(general=general, score=_score([general] if general else []))
    detect = min(detect_support or min_support, min_support)
    if len(wins) < 2 * detect:
        return best  # too few successes for two groups to show their procedures
    fields = _candidate_fields(wins, min_support=detect)
    for size in range(1, MAX_PAIR + 1):
        for chosen in combinations(sorted(fields), size):
            found = _partition(
                window, chosen, min_support=detect, step_share=step_share,
                habit_share=habit_share, fixes=fixes,
            )  # fmt: skip
            # Strictly more: a pair must explain more than either of its fields alone.
            if found is not None and found.score > best.score:
                best = found
    return best
