"""The agent world (bench/agentworld.py): Claude Code sessions as hook events to `engram serve`.

Real-looking sessions are sent to a real server. The default run checks the world itself
(it repeats from its seed; its agent follows what a context names, and only that) and that
a small run of one mode completes with well-formed figures; under `slow`, both modes at
full size.

The full runs assert what the server meets today (no command of another project, outcomes
that mostly agree with the truth, skills learned and followed); the procedures' share in
order is reported by bench.agentworld against its target."""

from __future__ import annotations

import json
import random
from pathlib import Path

import httpx
import pytest

from bench.agentcontext import in_order, mentions
from bench.agentreport import Figures
from bench.agentsessions import PAIRS, blind_plan, memory_plan, new_task, play
from bench.agentshop import RELEASE
from bench.agentwebapp import WEBAPP
from bench.agentworld import server, world_figures


def _sessions(seed: int) -> list[list[dict[str, object]]]:
    rng = random.Random(seed)
    out = []
    for project, kind in PAIRS:
        task = new_task(project, kind, rng)
        out.append(play(task, blind_plan(kind, rng), rng).events)
    return out


def test_the_world_repeats_from_its_seed() -> None:
    assert _sessions(3) == _sessions(3)
    assert _sessions(3) != _sessions(4)


def test_the_agent_follows_the_commands_a_context_names_in_its_order() -> None:
    rng = random.Random(1)
    shop = PAIRS[0][0]
    task = new_task(shop, RELEASE, rng)
    signatures = [s for sigs in task.step_signatures for s in sigs]
    told = "Skill release for shop: " + "; ".join(f"{n}. {s}" for n, s in enumerate(signatures, 1))
    plan, followed = memory_plan(task, told, rng)
    assert (plan, followed) == (list(range(len(RELEASE.steps))), len(RELEASE.steps))
    assert in_order(signatures, mentions(told, signatures)) == len(signatures)

    numbered = "Skill release in project shop, in order:\n" + "\n".join(
        f"  {n}. {s} (if it fails: {s}, then run it again)" for n, s in enumerate(signatures, 1)
    )
    assert memory_plan(task, numbered, rng)[0] == list(range(len(RELEASE.steps)))
    assert in_order(signatures, mentions(numbered, signatures)) == len(signatures)

    backwards = "\n".join(f"- `{s}`" for s in reversed(signatures))
    plan, followed = memory_plan(task, backwards, rng)
    assert plan == list(reversed(range(len(RELEASE.steps))))
    assert in_order(signatures, mentions(backwards, signatures)) == 1

    # Another project's release names none of this one's commands: the agent guesses.
    other = new_task(WEBAPP, WEBAPP.kinds[0], rng)
    elsewhere = "; ".join(s for sigs in other.step_signatures for s in sigs)
    assert memory_plan(task, elsewhere, rng)[1] == 0
    # A command named as a prefix of a longer one is not the shorter one.
    assert mentions("run `uv run pytest -q tests/x.py` first", ["uv run pytest -q"]) == []


def test_the_right_procedure_succeeds_and_guessing_seldom_does() -> None:
    rng = random.Random(5)
    for project, kind in PAIRS:
        right = guessed = 0
        for _ in range(300):
            task = new_task(project, kind, rng)
            right += play(task, list(range(len(kind.steps))), rng).success
            guessed += play(task, blind_plan(kind, rng), rng).success
        assert right / 300 > 0.8, (kind.project, kind.name, right)
        assert guessed / 300 < 0.4, (kind.project, kind.name, guessed)


async def _run(data_dir: Path, *, sessions: int, rewards: bool, probes: int) -> Figures:
    srv = server(data_dir, seed=7).start()
    try:
        async with httpx.AsyncClient(base_url=srv.url, timeout=60) as client:
            return await world_figures(
                client, sessions=sessions, rewards=rewards, seed=7, probes=probes
            )
    finally:
        srv.stop()


def _well_formed(figures: Figures, *, sessions: int, probes: int) -> None:
    total = sessions * len(PAIRS)
    assert figures.sessions == total
    assert figures.turns >= total + probes * len(PAIRS)
    assert [(k.project, k.kind) for k in figures.kinds] == [(p.name, k.name) for p, k in PAIRS]
    for k in figures.kinds:
        assert 0.0 <= k.worst <= k.in_order <= 1.0, k
        assert 3 <= len(k.procedure) <= 6, k.procedure
        assert 0 <= k.foreign <= probes
        assert 0 <= k.empty <= probes
        assert k.sessions == sessions
        assert 0.0 <= k.success <= 1.0
    assert figures.curve[-1]["sessions"] == total
    assert all(0.0 <= p["success"] <= 1.0 for p in figures.curve)
    outcomes = figures.outcomes
    # Every session's task turn found its episode (by its prompt): the agreement is measured.
    assert outcomes["judged"] >= total, outcomes
    assert 0 <= outcomes["labelled"] <= outcomes["judged"]
    assert outcomes["agree"] is None or 0.0 <= outcomes["agree"] <= 1.0
    latency = figures.prompt_latency_ms
    assert latency["n"] == figures.turns
    assert 0 < latency["p50"] <= latency["p95"]
    assert figures.memories == sum(figures.memory_types.values())
    assert not figures.jobs.get("queued")
    assert not figures.jobs.get("running")
    assert json.loads(json.dumps(figures.as_json()))["mode"] == figures.mode


async def test_a_small_world_runs_and_its_figures_are_well_formed(tmp_path: Path) -> None:
    figures = await _run(tmp_path, sessions=2, rewards=False, probes=1)
    assert figures.mode == "no-rewards"
    _well_formed(figures, sessions=2, probes=1)


@pytest.mark.slow
@pytest.mark.one_database  # the world's server runs on a SQLite file
@pytest.mark.parametrize("rewards", [True, False], ids=["rewards", "no-rewards"])
async def test_the_full_world(tmp_path: Path, rewards: bool) -> None:
    figures = await _run(tmp_path, sessions=20, rewards=rewards, probes=3)
    _well_formed(figures, sessions=20, probes=3)
    # What the server meets today, kept from slipping (the README's table has the rest,
    # and the procedures' share in order is not yet at its target).
    # The worker learns while a session's events arrive, so a run's figures move a little
    # with timing: each guard keeps a margin below what runs measure (README's table).
    assert [k.foreign for k in figures.kinds] == [0] * len(figures.kinds)
    assert figures.outcomes["agree"] >= 0.8
    assert figures.skills.get("active", 0) >= 4
    assert figures.curve[-1]["followed_memory"] >= 0.5
    assert max(k.in_order for k in figures.kinds) >= 0.5
    assert sum(k.in_order for k in figures.kinds) / len(figures.kinds) >= 0.3
    # Sessions that follow what they are handed succeed more often than the first ones.
    late = [p["success"] for p in figures.curve[-2:]]
    assert sum(late) / len(late) >= figures.curve[0]["success"] + 0.1
