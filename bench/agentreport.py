"""The agent world's figures (bench/agentworld.py): what they hold, the probes' measures, the table."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.agentcontext import in_order, mentions
from bench.agentkinds import Kind
from bench.agentsessions import PAIRS, PROJECTS, new_task

SAMPLE_CHARS = 3000


@dataclass
class KindFigures:
    project: str
    kind: str
    procedure: list[str]  # the signatures of one held-out ask's steps
    in_order: float  # mean over the probes: procedure commands named in order / steps
    worst: float
    foreign: int  # probes whose context named a command only other projects' procedures have
    foreign_commands: list[str]
    empty: int  # probes answered with no context at all
    sessions: int
    success: float  # the agent's success over this kind's training sessions
    sample_context: str = ""  # the first probe's context, cut short


@dataclass
class Figures:
    mode: str
    seed: int
    sessions_per_kind: int
    sessions: int = 0
    turns: int = 0
    kinds: list[KindFigures] = field(default_factory=list)
    block: int = 0  # sessions per point of the curve
    curve: list[dict[str, float]] = field(default_factory=list)  # per block of sessions
    outcomes: dict[str, Any] = field(default_factory=dict)
    memories: int = 0
    memories_per_1000_turns: float = 0.0
    memory_types: dict[str, int] = field(default_factory=dict)
    prompt_latency_ms: dict[str, float] = field(default_factory=dict)
    jobs: dict[str, int] = field(default_factory=dict)
    skills: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def project_signatures(seed: int, *, samples: int = 40) -> dict[str, set[str]]:
    """Per project, the signatures that only other projects' procedures have (over many
    sessions' arguments, since some signatures may keep an argument)."""
    rng = random.Random(f"{seed}:signatures")
    own: dict[str, set[str]] = {p.name: set() for p in PROJECTS}
    for project, kind in PAIRS:
        for _ in range(samples):
            task = new_task(project, kind, rng)
            own[project.name].update(s for sigs in task.step_signatures for s in sigs)
    everyone = set().union(*own.values())
    return {name: everyone - mine for name, mine in own.items()}


def probe_figures(
    kind: Kind,
    contexts: list[str],
    expected: list[list[str]],
    foreign: set[str],
    *,
    trained: list[bool],
) -> KindFigures:
    """One (project, kind)'s measures over its probes' contexts."""
    shares, strangers, leaked = [], set(), 0
    for context, want in zip(contexts, expected, strict=True):
        shares.append(in_order(want, mentions(context, want)) / len(want) if want else 0.0)
        named = set(mentions(context, foreign))
        strangers |= named
        leaked += bool(named)
    return KindFigures(
        project=kind.project,
        kind=kind.name,
        procedure=expected[0] if expected else [],
        in_order=round(sum(shares) / len(shares), 3) if shares else 0.0,
        worst=round(min(shares), 3) if shares else 0.0,
        foreign=leaked,
        foreign_commands=sorted(strangers),
        empty=sum(not c.strip() for c in contexts),
        sessions=len(trained),
        success=round(sum(trained) / len(trained), 3) if trained else 0.0,
        sample_context=contexts[0][:SAMPLE_CHARS] if contexts else "",
    )


def print_figures(results: Sequence[Figures]) -> None:
    """The figures of each mode side by side."""
    if not results:
        return
    first = results[0]
    print(
        f"agent world: {len(PROJECTS)} projects, {len(PAIRS)} (project, kind) pairs, "
        f"{first.sessions_per_kind} sessions each, seed {first.seed}"
    )
    modes = [f.mode for f in results]
    head = "".join(f"  {m:>21}" for m in modes)
    print(f"\n{'held-out asks':<32}{head}")
    print(f"{'project':<8} {'kind':<16} {'steps':>5}" + "  in order/worst foreign" * len(modes))
    for i, k in enumerate(first.kinds):
        cells = "".join(
            f"  {f.kinds[i].in_order:>8.2f}/{f.kinds[i].worst:<4.2f} {f.kinds[i].foreign:>7}"
            for f in results
        )
        print(f"{k.project:<8} {k.kind:<16} {len(k.procedure):>5}{cells}")
    for f in results:
        for k in f.kinds:
            if k.foreign_commands:
                print(f"  {f.mode}: {k.project}/{k.kind} was handed {k.foreign_commands}")
    print()
    for f in results:
        curve = " ".join(f"{p['success']:.0%}" for p in f.curve)
        followed = " ".join(f"{p['followed_memory']:.0%}" for p in f.curve)
        o = f.outcomes
        agree = "n/a" if o["agree"] is None else f"{o['agree']:.2f}"
        lat = f.prompt_latency_ms
        print(f"{f.mode}: {f.sessions} sessions, {f.turns} turns, {f.seconds:.0f} s")
        print(f"  success per block of {f.block}: {curve}")
        print(f"  sessions that followed recalled commands, per block: {followed}")
        print(
            f"  outcomes: {o['labelled']} of {o['judged']} judged episodes labelled, "
            f"agreement {agree}; {o['confusion']}"
        )
        print(
            f"  memories: {f.memories} ({f.memories_per_1000_turns:.0f} per 1,000 turns) {f.memory_types};"
            f" skills {f.skills}; jobs {f.jobs}"
        )
        print(f"  UserPromptSubmit latency: p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms")
