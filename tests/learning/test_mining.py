"""Pattern mining: Wilson bounds, stable pattern ids, recoveries and what one episode adds."""

from __future__ import annotations

from typing import Any

import pytest

from app.learning.mining import (
    Found,
    context_features,
    episode_patterns,
    pattern_id,
    recoveries,
    wilson_lcb,
    wilson_ucb,
)


def step(tool: str | None, action: str, status: str = "ok") -> dict[str, Any]:
    return {"tool": tool, "action": action, "status": status}


# --- Wilson score interval -------------------------------------------------------------


@pytest.mark.parametrize(
    ("successes", "n", "lcb", "ucb"),
    [
        (5, 10, 0.2366, 0.7634),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 1, 0.2065, 1.0),
        (50, 100, 0.4038, 0.5962),
    ],
)
def test_wilson_bounds_match_known_values(successes: int, n: int, lcb: float, ucb: float) -> None:
    assert wilson_lcb(successes, n) == pytest.approx(lcb, abs=1e-4)
    assert wilson_ucb(successes, n) == pytest.approx(ucb, abs=1e-4)


def test_wilson_bounds_without_observations_say_nothing() -> None:
    assert wilson_lcb(0, 0) == 0.0
    assert wilson_ucb(0, 0) == 1.0


def test_wilson_bounds_bracket_the_observed_rate() -> None:
    eps = 1e-12  # lcb(0, n) can come out as ~1e-17 rather than 0.0: float rounding only
    for n in (1, 3, 10, 57):
        for s in range(n + 1):
            lo, hi = wilson_lcb(s, n), wilson_ucb(s, n)
            assert 0.0 <= lo <= s / n + eps
            assert s / n - eps <= hi <= 1.0
            assert hi - lo > 0.01  # a real interval, never a point


def test_wilson_lcb_grows_with_successes() -> None:
    bounds = [wilson_lcb(s, 20) for s in range(21)]
    assert bounds[0] == 0.0
    assert all(a < b for a, b in zip(bounds, bounds[1:], strict=False))


def test_wilson_interval_tightens_with_more_observations() -> None:
    lcbs = [wilson_lcb(n // 2, n) for n in (10, 100, 1000)]
    ucbs = [wilson_ucb(n // 2, n) for n in (10, 100, 1000)]
    assert lcbs[0] < lcbs[1] < lcbs[2] < 0.5
    assert ucbs[0] > ucbs[1] > ucbs[2] > 0.5


def test_wilson_wider_z_gives_a_looser_bound() -> None:
    assert wilson_lcb(5, 10, z=2.576) < wilson_lcb(5, 10) < wilson_lcb(5, 10, z=1.0)


# --- pattern ids --------------------------------------------------------------------------


def test_pattern_id_is_stable() -> None:
    pid = pattern_id("action", "research", "search.web")
    assert pid == pattern_id("action", "research", "search.web")
    assert len(pid) == 32
    assert int(pid, 16) >= 0  # hex


def test_pattern_id_differs_across_kind_task_type_and_signature() -> None:
    ids = {
        pattern_id("action", "research", "search.web"),
        pattern_id("sequence", "research", "search.web"),
        pattern_id("action", "coding", "search.web"),
        pattern_id("action", "research", "search.cache"),
        # moving characters across the field boundary must not collide
        pattern_id("action", "researchsearch.web", ""),
        pattern_id("action", "", "researchsearch.web"),
    }
    assert len(ids) == 6


# --- context features ---------------------------------------------------------------------


def test_context_features_list_domain_language_and_sorted_unique_tags() -> None:
    assert context_features(domain="web", language="python", tags=["b", "a", "b"]) == [
        "domain=web",
        "language=python",
        "tag=a",
        "tag=b",
    ]


def test_context_features_skip_missing_values() -> None:
    assert context_features(domain=None, language="", tags=[]) == []
    assert context_features(domain=None, language="go", tags=["x"]) == ["language=go", "tag=x"]


# --- recoveries ---------------------------------------------------------------------------


def test_recovery_prefers_a_later_ok_step_of_the_same_tool() -> None:
    steps = [step("search", "web", "error"), step("llm", "plan"), step("search", "cache")]
    assert recoveries(steps) == [("search.web", "search.cache")]


def test_recovery_falls_back_to_the_next_ok_step() -> None:
    steps = [
        step("shell", "run", "error"),
        step("llm", "plan", "error"),
        step("editor", "write"),
        step("llm", "summarize"),
    ]
    assert recoveries(steps) == [
        ("shell.run", "editor.write"),
        ("llm.plan", "llm.summarize"),
    ]


def test_steps_without_a_tool_do_not_match_each_other_as_same_tool() -> None:
    steps = [step(None, "think", "error"), step("search", "web"), step(None, "retry")]
    assert recoveries(steps) == [("think", "search.web")]


def test_no_recovery_without_a_later_ok_step() -> None:
    assert recoveries([step("llm", "plan"), step("search", "web", "error")]) == []
    assert recoveries([step("search", "web", "error"), step("search", "cache", "timeout")]) == []
    # an earlier ok step does not recover a later failure
    assert recoveries([step("search", "cache"), step("search", "web", "error")]) == []


def test_step_without_status_counts_as_ok() -> None:
    steps = [step("search", "web", "error"), {"tool": "search", "action": "cache"}]
    assert recoveries(steps) == [("search.web", "search.cache")]


# --- episode_patterns -----------------------------------------------------------------------


def test_episode_patterns_exact_set() -> None:
    steps = [
        step("search", "web", "error"),  # 0
        step("llm", "plan"),  # 1
        step("search", "cache"),  # 2
        step("llm", "plan"),  # 3  (plan occurs both before and after cache)
        step("shell", "run", "error"),  # 4
        step("editor", "write"),  # 5
    ]
    found = episode_patterns(
        steps=steps,
        context=["domain=web", "tag=x", "domain=web"],
        skills_applied=["s1", "s1", "s2", "s1", "s2"],
    )
    assert len(found) == len(set(found)), "each pattern once"
    by_kind: dict[str, set[str]] = {}
    for f in found:
        by_kind.setdefault(f.kind, set()).add(f.signature)

    assert by_kind["task"] == {""}
    assert by_kind["action"] == {
        "search.web",
        "llm.plan",
        "search.cache",
        "shell.run",
        "editor.write",
    }
    assert by_kind["sequence"] == {
        "search.web > llm.plan",
        "search.web > search.cache",
        "search.web > shell.run",
        "search.web > editor.write",
        "llm.plan > search.cache",
        "llm.plan > shell.run",
        "llm.plan > editor.write",
        "search.cache > llm.plan",
        "search.cache > shell.run",
        "search.cache > editor.write",
        "shell.run > editor.write",
    }
    assert by_kind["recovery"] == {"search.web ! search.cache", "shell.run ! editor.write"}
    assert by_kind["context"] == {"domain=web", "tag=x"}
    assert by_kind["skill_chain"] == {"s1 > s2", "s2 > s1"}
    assert set(by_kind) == {"task", "action", "sequence", "recovery", "context", "skill_chain"}
    assert len(found) == 1 + 5 + 11 + 2 + 2 + 2


def test_episode_patterns_items_match_signature() -> None:
    found = episode_patterns(
        steps=[step("search", "web", "error"), step("search", "cache")],
        context=["language=go"],
        skills_applied=["s1", "s2"],
    )
    assert found == [
        Found("task", "", ()),
        Found("action", "search.web", ("search.web",)),
        Found("action", "search.cache", ("search.cache",)),
        Found("sequence", "search.web > search.cache", ("search.web", "search.cache")),
        Found("recovery", "search.web ! search.cache", ("search.web", "search.cache")),
        Found("context", "language=go", ("language=go",)),
        Found("skill_chain", "s1 > s2", ("s1", "s2")),
    ]


def test_episode_patterns_no_self_pairs_for_repeated_action() -> None:
    found = episode_patterns(
        steps=[step("llm", "plan"), step("llm", "plan"), step("llm", "plan")],
        context=[],
        skills_applied=["s1", "s1"],
    )
    assert found == [Found("task", "", ()), Found("action", "llm.plan", ("llm.plan",))]


def test_empty_episode_still_counts_for_the_task() -> None:
    assert episode_patterns(steps=[], context=[], skills_applied=[]) == [Found("task", "", ())]


def test_sequence_pairs_are_bounded_for_long_episodes() -> None:
    from app.learning.mining import MAX_SEQUENCE_ACTIONS, episode_patterns

    steps = [{"tool": "fs", "action": f"read_{i}", "status": "ok"} for i in range(1000)]
    found = episode_patterns(steps=steps, context=[], skills_applied=[])
    sequences = [f for f in found if f.kind == "sequence"]
    n = MAX_SEQUENCE_ACTIONS
    assert len(sequences) == n * (n - 1) // 2
    assert len([f for f in found if f.kind == "action"]) == 1000
    assert ("fs.read_0", "fs.read_1") in {f.items for f in sequences}
    assert not any("fs.read_999" in f.items for f in sequences)
