"""Skill evolution: derive a hidden procedure from noisy episodes, measure it, prune,
split by context and retire."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from app.learning.mining import wilson_lcb, wilson_ucb
from app.learning.skills import (
    MAX_EVIDENCE,
    EpisodeView,
    Procedure,
    contains_in_order,
    context_split,
    derive,
    jaccard,
    measure,
    retire_reason,
    unneeded,
)

PROCEDURE = ("a", "b", "c")


def ep(
    eid: str,
    actions: tuple[str, ...] | list[str],
    *,
    success: bool,
    reward: float | None = None,
    statuses: tuple[str, ...] | None = None,
    context: tuple[tuple[str, str], ...] = (),
    skills: tuple[str, ...] = (),
) -> EpisodeView:
    actions = tuple(actions)
    return EpisodeView(
        id=eid,
        actions=actions,
        statuses=statuses if statuses is not None else ("ok",) * len(actions),
        success=success,
        reward=reward if reward is not None else (1.0 if success else -1.0),
        context=context,
        skills=skills,
    )


def world(
    n: int = 60,
    *,
    seed: int = 0,
    b_fails: float = 0.0,
    always: str | None = None,
) -> list[EpisodeView]:
    """Unguided episodes: each of a, b, c is done with probability 0.8 (in that order) and
    the episode succeeds exactly when all three were done. "x" (often) and "y" (rarely)
    are distractors inserted anywhere. With probability `b_fails`, b fails and "b_fix"
    right after it recovers it. With `always`, that action opens every episode."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        acts: list[str] = []
        stats: list[str] = []
        for s in PROCEDURE:
            if rng.random() < 0.8:
                failed = s == "b" and rng.random() < b_fails
                acts.append(s)
                stats.append("error" if failed else "ok")
                if failed:
                    acts.append("b_fix")
                    stats.append("ok")
        success = all(s in acts for s in PROCEDURE)
        for d, p in (("x", 0.8), ("y", 0.2)):
            if rng.random() < p:
                pos = rng.randint(0, len(acts))
                acts.insert(pos, d)
                stats.insert(pos, "ok")
        if always:
            acts.insert(0, always)
            stats.insert(0, "ok")
        out.append(ep(f"e{i}", acts, success=success, statuses=tuple(stats)))
    return out


def share_of_wins_with(action: str, window: list[EpisodeView]) -> float:
    wins = [e for e in window if e.success]
    return sum(action in e.actions for e in wins) / len(wins)


# --- contains_in_order ---------------------------------------------------------------------


def test_contains_in_order() -> None:
    assert contains_in_order(["a", "x", "b", "y", "c"], ["a", "b", "c"])
    assert contains_in_order(["a", "b"], [])
    assert not contains_in_order(["b", "a", "c"], ["a", "b", "c"])
    assert not contains_in_order(["a", "b"], ["a", "b", "c"])
    assert not contains_in_order(["a", "b"], ["a", "a"])
    assert contains_in_order(["a", "b", "a"], ["a", "a"])
    assert not contains_in_order([], ["a"])


# --- measure --------------------------------------------------------------------------------


def test_measure_counts_only_episodes_that_did_the_steps_in_order() -> None:
    window = [
        ep("w1", ["a", "x", "b"], success=True, reward=1.0),
        ep("w2", ["a", "b"], success=True, reward=0.5),
        ep("l1", ["a", "b"], success=False, reward=-0.5),
        ep("o1", ["b", "a"], success=True, reward=1.0),  # wrong order
        ep("o2", ["a"], success=True, reward=1.0),  # incomplete
    ]
    p = measure(["a", "b"], window, on_error={"a": "x"})
    assert p.steps == ("a", "b")
    assert p.on_error == {"a": "x"}
    assert p.support == 3
    assert p.successes == 2
    assert p.success_rate == pytest.approx(2 / 3)
    assert p.mean_reward == pytest.approx((1.0 + 0.5 - 0.5) / 3)
    assert p.lcb == pytest.approx(wilson_lcb(2, 3))
    assert p.evidence == ("w1", "w2")


def test_measure_with_no_hits() -> None:
    p = measure(["z"], [ep("w1", ["a"], success=True)])
    assert (p.support, p.successes, p.mean_reward, p.lcb, p.evidence) == (0, 0, None, 0.0, ())
    assert p.success_rate == 0.0


def test_measure_evidence_is_the_latest_successes_only() -> None:
    window = []
    for i in range(30):
        window.append(ep(f"w{i}", ["a"], success=True))
        window.append(ep(f"l{i}", ["a"], success=False))
    p = measure(["a"], window)
    assert p.support == 60
    assert p.successes == 30
    assert len(p.evidence) == MAX_EVIDENCE == 20
    assert p.evidence == tuple(f"w{i}" for i in range(10, 30))


# --- derive ---------------------------------------------------------------------------------


def test_derive_recovers_the_hidden_procedure_and_ignores_distractors() -> None:
    window = world()
    wins = [e for e in window if e.success]
    # preconditions that make the test meaningful: enough wins, and the frequent
    # distractor is common enough among wins that only the "needed" test can drop it
    assert len(wins) >= 20
    assert share_of_wins_with("x", window) >= 0.6
    proc = derive(window, min_support=5, step_share=0.6)
    assert proc is not None
    assert proc.steps == PROCEDURE
    assert "x" not in proc.steps
    assert "y" not in proc.steps
    assert proc.on_error == {}
    # measured on the whole window: every episode that did a, b, c in order succeeded
    assert proc.support == len(wins)
    assert proc.successes == len(wins)
    assert proc.lcb == pytest.approx(wilson_lcb(len(wins), len(wins)))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_derive_is_not_a_lucky_seed(seed: int) -> None:
    proc = derive(world(80, seed=seed), min_support=5, step_share=0.6)
    assert proc is not None
    assert proc.steps == PROCEDURE


def test_derive_needs_min_support_successes() -> None:
    window = world()
    wins = [e for e in window if e.success]
    few = [e for e in window if not e.success] + wins[:4]
    assert derive(few, min_support=5, step_share=0.6) is None
    assert derive(few + wins[4:5], min_support=5, step_share=0.6) is not None


def test_derive_orders_steps_by_precedence_not_by_name() -> None:
    # same world with the procedure renamed so that alphabetical order is wrong
    rename = {"a": "zeta", "b": "alpha", "c": "mid"}
    window = [
        ep(e.id, [rename.get(x, x) for x in e.actions], success=e.success, statuses=e.statuses)
        for e in world()
    ]
    proc = derive(window, min_support=5, step_share=0.6)
    assert proc is not None
    assert proc.steps == ("zeta", "alpha", "mid")


def test_known_fix_is_on_error_not_a_step() -> None:
    window = world(b_fails=1.0)
    assert share_of_wins_with("b_fix", window) == 1.0
    # without being told, b_fix looks like a needed step of its own
    plain = derive(window, min_support=5, step_share=0.6)
    assert plain is not None
    assert plain.steps == ("a", "b", "b_fix", "c")
    # told that b_fix recovers b, it becomes b's on_error
    proc = derive(window, min_support=5, step_share=0.6, fixes={"b": "b_fix"})
    assert proc is not None
    assert proc.steps == PROCEDURE
    assert "b_fix" not in proc.steps
    assert proc.on_error["b"] == "b_fix"


def test_on_error_learned_from_failures_in_wins() -> None:
    # b sometimes fails and b_fix right after recovers it: too rare to be a step, but
    # the step's on_error, learned from the wins without being told
    window = world(b_fails=0.3)
    assert share_of_wins_with("b_fix", window) < 0.6
    proc = derive(window, min_support=5, step_share=0.6)
    assert proc is not None
    assert proc.steps == PROCEDURE
    assert proc.on_error == {"b": "b_fix"}


def test_action_in_every_episode_is_kept_as_a_step() -> None:
    # Intended: _needed cannot tell whether an action matters when fewer than min_support
    # unguided episodes lack it, so it errs towards keeping it. An action every episode
    # performs (wins and losses alike) therefore becomes a step of the procedure.
    window = world(always="init")
    proc = derive(window, min_support=5, step_share=0.6)
    assert proc is not None
    assert proc.steps == ("init", *PROCEDURE)


def test_guided_episodes_do_not_decide_what_is_needed() -> None:
    # Episodes that followed a skill and skipped "x" while failing would make "x" look
    # needed if they counted; only unguided episodes judge necessity.
    window = world()
    guided = [ep(f"g{i}", ["a", "b", "c"], success=False, skills=("s1",)) for i in range(30)]
    proc = derive(window + guided, min_support=5, step_share=0.6)
    assert proc is not None
    assert "x" not in proc.steps
    assert proc.steps == PROCEDURE


def test_derive_without_any_needed_action_returns_none() -> None:
    # successes happen at random, whatever the agent did: nothing is needed
    rng = random.Random(0)
    window = [
        ep(f"e{i}", [s for s in ("p", "q") if rng.random() < 0.5], success=rng.random() < 0.5)
        for i in range(80)
    ]
    assert derive(window, min_support=5, step_share=0.3) is None


# --- unneeded -------------------------------------------------------------------------------


def test_unneeded_finds_a_step_followers_skipped_and_still_succeeded() -> None:
    followers = (
        [ep(f"full{i}", ["a", "b", "c"], success=True, skills=("s",)) for i in range(8)]
        + [ep(f"fullx{i}", ["a", "b", "c"], success=False, skills=("s",)) for i in range(2)]
        + [ep(f"nob{i}", ["a", "c"], success=True, skills=("s",)) for i in range(6)]
        + [ep(f"noc{i}", ["a", "b"], success=False, skills=("s",)) for i in range(6)]
    )
    found = unneeded(["a", "b", "c"], followers, min_support=5)
    assert [step for step, _ in found] == ["b"]
    _, without_b = found[0]
    assert without_b.steps == ("a", "c")
    assert without_b.support == 6
    assert without_b.successes == 6


def test_unneeded_requires_min_support_skippers() -> None:
    followers = [ep(f"full{i}", ["a", "b", "c"], success=True) for i in range(8)] + [
        ep(f"nob{i}", ["a", "c"], success=True) for i in range(4)
    ]
    assert unneeded(["a", "b", "c"], followers, min_support=5) == []


def test_unneeded_respects_the_margin() -> None:
    # full rate 1.0; skipping b succeeds 5 of 6 (0.83): unneeded at margin 0.2, not at 0.1
    followers = (
        [ep(f"full{i}", ["a", "b", "c"], success=True) for i in range(10)]
        + [ep(f"nob{i}", ["a", "c"], success=True) for i in range(5)]
        + [ep("nob-lost", ["a", "c"], success=False)]
    )
    assert unneeded(["a", "b", "c"], followers, min_support=5, margin=0.1) == []
    assert [s for s, _ in unneeded(["a", "b", "c"], followers, min_support=5, margin=0.2)] == ["b"]


def test_single_step_is_never_unneeded() -> None:
    followers = [ep(f"e{i}", ["z"], success=True) for i in range(10)]
    assert unneeded(["a"], followers, min_support=5) == []


# --- jaccard --------------------------------------------------------------------------------


def test_jaccard() -> None:
    assert jaccard(["a", "b"], ["b", "c"]) == pytest.approx(1 / 3)
    assert jaccard(["a", "b"], ["b", "a"]) == 1.0
    assert jaccard(["a"], ["b"]) == 0.0
    assert jaccard([], []) == 1.0
    assert jaccard(["a"], []) == 0.0
    assert jaccard(["a", "a", "b"], ["a"]) == pytest.approx(1 / 2)


# --- context_split --------------------------------------------------------------------------


def split_window(*, cli_success: bool) -> list[EpisodeView]:
    web = [
        ep(f"web{i}", ["a", "b"], success=True, context=(("domain", "web"), ("language", "py")))
        for i in range(20)
    ]
    cli = [
        ep(
            f"cli{i}",
            ["a", "b"],
            success=cli_success,
            context=(("domain", "cli"), ("language", "py")),
        )
        for i in range(20)
    ]
    return web + cli


def test_context_split_finds_where_the_procedure_works_and_fails() -> None:
    split = context_split(
        ["a", "b"], split_window(cli_success=False), min_support=5, good_lcb=0.6, bad_below=0.4
    )
    assert split is not None
    assert split.feature == ("domain", "web")
    assert split.bad_feature == ("domain", "cli")
    assert (split.good.support, split.good.successes) == (20, 20)
    assert (split.bad.support, split.bad.successes) == (20, 0)
    assert split.good.lcb >= 0.6
    assert wilson_ucb(split.bad.successes, split.bad.support) < 0.4


def test_context_split_none_when_it_works_everywhere() -> None:
    assert (
        context_split(
            ["a", "b"], split_window(cli_success=True), min_support=5, good_lcb=0.6, bad_below=0.4
        )
        is None
    )


def test_context_split_compares_values_of_the_same_feature_only() -> None:
    window = [ep(f"w{i}", ["a"], success=True, context=(("domain", "web"),)) for i in range(20)] + [
        ep(f"s{i}", ["a"], success=False, context=(("tag.slow", "true"),)) for i in range(20)
    ]
    assert context_split(["a"], window, min_support=5, good_lcb=0.6, bad_below=0.4) is None


def test_context_split_needs_support_on_both_sides() -> None:
    window = [ep(f"w{i}", ["a"], success=True, context=(("domain", "web"),)) for i in range(20)] + [
        ep(f"c{i}", ["a"], success=False, context=(("domain", "cli"),)) for i in range(4)
    ]
    assert context_split(["a"], window, min_support=5, good_lcb=0.6, bad_below=0.9) is None


# --- retire_reason --------------------------------------------------------------------------


def uses(*outcomes: tuple[bool, float | None]) -> list[dict[str, object]]:
    return [{"success": s, "reward": r} for s, r in outcomes]


def test_no_verdict_before_enough_uses() -> None:
    assert retire_reason(uses(*[(False, -1.0)] * 4), after_uses=5, below=0.5) is None


def test_retire_when_success_share_is_below_threshold() -> None:
    recent = uses((True, 1.0), (False, -1.0), (True, 1.0), (False, -1.0), (False, 5.0))
    reason = retire_reason(recent, after_uses=5, below=0.5)
    assert reason is not None
    assert "2 of its last 5" in reason


def test_retire_when_rewards_do_not_add_up() -> None:
    recent = uses((True, 0.2), (True, -0.2), (True, 0.0), (True, None), (True, 0.0))
    reason = retire_reason(recent, after_uses=5, below=0.5)
    assert reason is not None
    assert "reward" in reason


def test_keep_a_skill_that_works() -> None:
    recent = uses((True, 0.5), (False, -0.2), (True, 0.1), (True, 0.1), (False, -0.1))
    assert retire_reason(recent, after_uses=5, below=0.5) is None


def test_only_the_latest_uses_count() -> None:
    bad, good = (False, -1.0), (True, 1.0)
    assert retire_reason(uses(*[bad] * 5, *[good] * 5), after_uses=5, below=0.5) is None
    reason = retire_reason(uses(*[good] * 5, *[bad] * 5), after_uses=5, below=0.5)
    assert reason is not None
    assert "0 of its last 5" in reason


def test_the_successes_done_right_the_first_time_order_the_steps() -> None:
    # Two tasks done in order at once; three put right in a later turn, where the fix (the
    # edit) came after the rest: the first ones say where the edit goes, ten times as loud.
    right = ("revision", "edit", "upgrade", "pytest")
    fixed = ("revision", "upgrade", "pytest", "edit", "pytest")
    window = [EpisodeView(f"r{i}", right, ("ok",) * 4, True, 1.0) for i in range(2)] + [
        EpisodeView(f"f{i}", fixed, ("ok",) * 5, True, 1.0, repaired=True) for i in range(3)
    ]
    proc = derive(window, min_support=2, step_share=0.8)
    assert proc is not None
    assert proc.steps == right
    # One of them outweighs the three.
    proc = derive(window[1:], min_support=2, step_share=0.8)
    assert proc is not None
    assert proc.steps == right
    # Without them there is no order to go by, and no procedure yet.
    assert derive(window[2:], min_support=2, step_share=0.8) is None


def test_a_fix_turn_places_what_was_missing_by_its_own_order_only() -> None:
    # One task done right at once; twelve that left the edit out, failed, and were put
    # right by a fix turn (the edit, the tests again). Twelve repaired ones outweigh the
    # one, but the edit coming after the upgrade in them says nothing: it was the fix.
    right = ("revision", "edit", "upgrade", "pytest")
    fixed = ("revision", "upgrade", "pytest", "edit", "pytest")
    once = [EpisodeView("r", right, ("ok",) * 4, True, 1.0)]
    turns = [
        EpisodeView(f"f{i}", fixed, ("ok",) * 5, True, 1.0, repaired=True, turns=(3,))
        for i in range(12)
    ]
    proc = derive(once + turns, min_support=2, step_share=0.8)
    assert proc is not None
    assert proc.steps == right
    # Read as one turn, the twelve would put the edit last.
    merged = [replace(e, turns=()) for e in turns]
    proc = derive(once + merged, min_support=2, step_share=0.8)
    assert proc is not None
    assert proc.steps == ("revision", "upgrade", "pytest", "edit")


def test_a_handful_of_episodes_without_a_step_does_not_drop_it() -> None:
    # Four unguided tasks left "revision" out and two of them looked fine; four did it and
    # two of those looked fine. Half as often is not shown by four episodes: it stays a
    # step. Forty without it doing as well as forty with it do show it is not needed.
    steps = ("revision", "edit", "upgrade")
    few = [ep(f"w{i}", steps, success=i < 2) for i in range(4)]
    few += [ep(f"o{i}", steps[1:], success=i < 2) for i in range(4)]
    proc = derive(few + [ep("s", steps, success=True)], min_support=3, step_share=0.6)
    assert proc is not None
    assert proc.steps == steps
    many = [ep(f"w{i}", steps, success=i % 2 == 0) for i in range(40)]
    many += [ep(f"o{i}", steps[1:], success=i % 2 == 0) for i in range(40)]
    proc = derive(many, min_support=3, step_share=0.4)
    assert proc is not None
    assert proc.steps == steps[1:]


def test_a_repaired_task_did_the_steps_in_order_when_each_turn_did() -> None:
    steps = ("image", "push", "context", "set", "status")
    # The first turn did all but the context switch and failed; the fix switched and set
    # the image again: each turn in order, so the task did the procedure.
    fixed = ("image", "push", "set", "status", "context", "set")
    e = EpisodeView("f", fixed, ("ok",) * 6, True, 1.0, repaired=True, turns=(4,))
    assert e.performed(steps)
    assert not contains_in_order(fixed, steps)
    assert measure(steps, [e]).support == 1
    # Not when one turn did two steps the other way round, or one was never done.
    wrong = ("push", "image", "set", "status", "context", "set")
    assert not replace(e, actions=wrong).performed(steps)
    assert not e.performed((*steps, "rollback"))
    # One turn: the order of the whole.
    assert not replace(e, repaired=False, turns=()).performed(steps)


def test_a_skills_order_echoed_by_its_followers_does_not_decide_the_order() -> None:
    # Five successes followed a skill that showed the push before the tag (and got away
    # with it); one agent that followed none tagged first. The followers' order of the two
    # is the skill's echo: the one that worked it out decides.
    right = ("commit", "tag", "push")
    echo = ("commit", "push", "tag")
    window = [ep("u", right, success=True)]
    followers = [ep(f"g{i}", echo, success=True, skills=("s1",)) for i in range(5)]
    shown = [replace(e, shown=frozenset({"commit", "push", "tag"})) for e in followers]
    proc = derive(window + shown, min_support=3, step_share=0.8)
    assert proc is not None
    assert proc.steps == right
    # A skill that showed neither (another kind's, borrowed): the order is the agents' own.
    other = [replace(e, shown=frozenset({"lint"})) for e in followers]
    proc = derive(window + other, min_support=3, step_share=0.8)
    assert proc is not None
    assert proc.steps == echo


def test_an_agents_skill_beats_going_without_by_its_rate_and_a_task_types_by_its_bound() -> None:
    from app.core.config import Learning
    from app.services.learning.skill_rules import AGENT_MARGIN, Judge

    judge = Judge(Learning(min_support=5))
    steps = ("edit", "test", "tag", "push")
    followed = [ep(f"f{i}", steps, success=i != 0) for i in range(9)]  # 8 of 9
    # Turns that left a step out and mostly looked fine (their outcomes inferred): 12 of 17.
    others = [ep(f"o{i}", steps[: i % 4] + steps[i % 4 + 1 :], success=i < 12) for i in range(17)]
    rate, lcb = 8 / 9, wilson_lcb(8, 9)
    assert lcb < 12 / 17 < rate - AGENT_MARGIN
    # A task type's skill must beat the base rate by its lower bound: not yet.
    assert not judge.beats(steps, lcb, rate, 12 / 17)
    # An agents' kind's by its rate, against those that went without it.
    judge.counterfactual = followed + others
    assert judge.beats(steps, lcb, rate, 12 / 17)
    # Not when going without does about as well.
    judge.counterfactual = followed + [ep(f"o{i}", steps[1:], success=i < 14) for i in range(17)]
    assert not judge.beats(steps, lcb, rate, 12 / 17)


# --- optional steps -------------------------------------------------------------------------


def with_habit(
    window: list[EpisodeView], action: str, *, share: float, seed: int
) -> list[EpisodeView]:
    """The window with `action` done at the end of `share` of its episodes, successes and
    failures alike: a habit the outcome does not depend on (a commit after the work)."""
    rng = random.Random(seed)
    out = []
    for e in window:
        if rng.random() < share:
            e = EpisodeView(e.id, (*e.actions, action), (*e.statuses, "ok"), e.success, e.reward)
        out.append(e)
    return out


def test_a_habit_at_the_same_place_is_an_optional_step_never_required() -> None:
    window = with_habit(world(200, seed=3), "commit", share=0.7, seed=3)
    assert not derive(window, min_support=5, step_share=0.8).shown  # (none asked for)
    proc = derive(window, min_support=5, step_share=0.8, habit_share=0.5)
    assert proc is not None
    assert proc.steps == PROCEDURE  # not needed: the episodes without it do as well
    assert proc.shown == (*PROCEDURE, "commit")
    assert proc.optional == {"commit"}
    # Measured on what it needs: the successes that did not commit count too.
    assert proc.support == measure(PROCEDURE, window).support
    assert proc.support > measure((*PROCEDURE, "commit"), window).support
    # Done in fewer than habit_share of the successes, it is not shown.
    assert derive(window, min_support=5, step_share=0.8, habit_share=0.8).shown == ()


def test_a_habit_goes_after_the_last_step_done_before_it() -> None:
    # The successes commit after the tests; some of them skipped the optional lint: the
    # commit's place is still after the tests, not before them.
    steps = ("install", "lint", "test")
    window = [ep(f"s{i}", (*steps, "commit"), success=True) for i in range(6)]
    window += [ep(f"k{i}", ("install", "test", "commit"), success=True) for i in range(4)]
    window += [ep(f"n{i}", steps, success=True) for i in range(6)]
    window += [ep(f"f{i}", ("install",), success=False) for i in range(6)]
    proc = derive(window, min_support=3, step_share=0.7, habit_share=0.5)
    assert proc is not None
    assert proc.steps == steps
    assert proc.shown == (*steps, "commit")


def test_an_action_done_anywhere_or_failed_first_is_no_habit() -> None:
    # "x" is in 80% of the episodes, but anywhere among the steps; "b_fix" is done in
    # most successes, but only after b failed (b's recovery, not a habit); "c_try" is a
    # first try that fails right before c, in most episodes that do c.
    window = world(200, seed=4, b_fails=0.7)
    rng = random.Random(4)
    tried = []
    for e in window:
        if "c" in e.actions and rng.random() < 0.6:
            at = e.actions.index("c")
            e = EpisodeView(
                e.id,
                (*e.actions[:at], "c_try", *e.actions[at:]),
                (*e.statuses[:at], "error", *e.statuses[at:]),
                e.success,
                e.reward,
            )
        tried.append(e)
    assert min(share_of_wins_with(a, tried) for a in ("x", "b_fix", "c_try")) >= 0.5
    proc = derive(tried, min_support=5, step_share=0.8, habit_share=0.5, fixes={"b": "b_fix"})
    assert proc is not None
    assert proc.steps == PROCEDURE
    assert proc.shown == ()


def test_a_skill_needs_its_steps_shows_its_optional_ones_and_takes_new_ones() -> None:
    from app.core.config import Learning
    from app.models import Skill
    from app.services.learning.skill_rules import actions, settled, skill_steps

    proc = Procedure(("a", "b", "c"), on_error={"b": "b_fix"}, support=20, successes=18)
    shown = replace(proc, shown=("setup", "a", "b", "c", "commit"))
    stored = skill_steps(shown)
    assert stored == [
        {"action": "setup", "on_error": None, "optional": True},
        {"action": "a", "on_error": None},
        {"action": "b", "on_error": "b_fix"},
        {"action": "c", "on_error": None},
        {"action": "commit", "on_error": None, "optional": True},
    ]
    skill = Skill(steps=stored, lcb=0.7, success_rate=0.9)
    assert actions(skill) == ["a", "b", "c"]  # what followers are matched and measured by
    settings = Learning()
    assert settled(skill, shown, settings) is None
    # One optional step more: a new version; one fewer: not before the steps change.
    more = replace(proc, shown=("setup", "lint", "a", "b", "c", "commit"))
    assert settled(skill, more, settings) == (more, "optional steps")
    assert settled(skill, replace(proc, shown=("a", "b", "c", "commit")), settings) is None
    assert settled(skill, proc, settings) is None
