"""The steps learning reads: agents' signatures for their tool calls, exploration left out,
and an agent's consecutive turns at one task taken as one episode."""

from __future__ import annotations

from app.learning.skills import EpisodeView
from app.learning.steps import actions_of, learning_steps, merge_turns


def test_signatures_replace_an_agents_tool_calls() -> None:
    skeletons = [
        {"tool": "Read", "action": "Read", "status": "ok", "signature": []},
        {
            "tool": "Bash",
            "action": "Bash",
            "status": "error",
            "latency_ms": 30.0,
            "signature": ["git add -A", "git commit -m <text>"],
        },
        {"tool": "pytest", "action": "run_tests", "status": "ok"},
    ]
    steps = learning_steps(skeletons)
    assert [(s["action"], s["status"]) for s in steps] == [
        ("git add -A", "ok"),
        ("git commit -m <text>", "error"),  # a compound line fails at its last part
        ("run_tests", "ok"),
    ]
    assert steps[1]["latency_ms"] == 30.0
    assert actions_of(skeletons) == ["git add -A", "git commit -m <text>", "pytest.run_tests"]


def _view(eid: str, actions: tuple[str, ...], success: bool) -> EpisodeView:
    return EpisodeView(eid, actions, ("ok",) * len(actions), success, float(success))


def test_an_agents_turns_at_one_task_are_one_episode() -> None:
    views = [
        _view("a1", ("edit pyproject.toml", "uv run pytest -q"), False),
        _view("a2", ("git tag <version>", "git push origin main --tags"), True),
        _view("a3", (), False),  # "thanks!": no outcome of its own
        _view("b1", ("uv run pytest -q",), True),
        _view("c1", ("pytest.run_tests",), True),
        _view("c2", ("pytest.run_tests",), False),
    ]
    tasks = ["s1", "s1", "s1", "s2", None, None]
    outcomes = ["failure", "success", "unknown", "success", "success", "failure"]
    merged = merge_turns(views, tasks, outcomes)
    assert [(v.id, v.success, v.repaired) for v in merged] == [
        ("a2", True, True),  # failed in its first turn, put right in its second
        ("b1", True, False),
        ("c1", True, False),
        ("c2", False, False),
    ]
    assert merged[0].actions == (
        "edit pyproject.toml",
        "uv run pytest -q",
        "git tag <version>",
        "git push origin main --tags",
    )
    # Where its second and third turns began: its second turn's steps are the fix.
    assert merged[0].turns == (2, 4)
    assert [merged[0].turn_of(i) for i in range(4)] == [0, 0, 1, 1]
    assert merged[1].turns == ()


def test_a_turn_uses_its_skills_when_it_acted_and_how_it_went_is_known() -> None:
    from app.learning.steps import uses_skills

    step = [{"action": "git tag <version>", "status": "ok"}]
    assert uses_skills(step, "success", False)
    assert uses_skills(step, "failure", False)
    assert uses_skills(step, "unknown", True)  # a reward told the task's success
    assert not uses_skills(step, "unknown", False)
    assert not uses_skills([], "success", True)  # "thanks": it did nothing with them
