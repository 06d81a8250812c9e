"""Reflection: recoveries, repeats, slow steps, and comparison with a reference."""

from __future__ import annotations

from typing import Any

from app.learning.reflection import MAX_ENTRIES, Reflection, action_key, reflect


def step(
    tool: str | None, action: str, status: str = "ok", latency_ms: float | None = None
) -> dict[str, Any]:
    return {
        "tool": tool,
        "action": action,
        "status": status,
        "latency_ms": latency_ms,
        "tokens": None,
    }


def test_action_key() -> None:
    assert action_key(step("search", "web")) == "search.web"
    assert action_key(step(None, "think")) == "think"


def test_recovered_error_is_a_success_and_a_rule() -> None:
    r = reflect(
        steps=[step("search", "web", "error"), step("llm", "plan"), step("search", "cache")],
        outcome="success",
        reward=0.9,
        reference=None,
    )
    assert r.successes == [
        "completed the task with reward 0.9",
        "recovered from error in search.web with search.cache",
    ]
    assert "when search.web fails, search.cache recovers it" in r.insights
    assert r.insights[0] == "succeeded with reward 0.9"
    assert r.improvements == []


def test_workaround_counts_only_when_the_episode_did_not_fail() -> None:
    steps = [step("search", "web", "error"), step("llm", "answer")]
    ok = reflect(steps=steps, outcome="success", reward=1.0, reference=None)
    assert "recovered from error in search.web with llm.answer" in ok.successes
    bad = reflect(steps=steps, outcome="failure", reward=-0.5, reference=None)
    assert bad.improvements == ["error in search.web was not recovered"]
    assert bad.insights == ["failed with reward -0.5"]
    assert bad.successes == []


def test_unrecovered_timeout_and_all_ok() -> None:
    r = reflect(steps=[step("db", "query", "timeout")], outcome=None, reward=None, reference=None)
    assert r.improvements == ["timeout in db.query was not recovered"]
    assert r.insights == ["still open"]
    clean = reflect(
        steps=[step("a", "x"), step("b", "y")], outcome="success", reward=None, reference=None
    )
    assert "all 2 steps completed without errors" in clean.successes


def test_repeated_steps_but_not_retries() -> None:
    r = reflect(
        steps=[step("fs", "read"), step("fs", "read"), step("llm", "plan"), step("fs", "read")],
        outcome="success",
        reward=1.0,
        reference=None,
    )
    assert "fs.read repeated 3 times" in r.improvements
    retry = reflect(
        steps=[step("fs", "read", "error"), step("fs", "read")],
        outcome="success",
        reward=1.0,
        reference=None,
    )
    assert not any("repeated" in s for s in retry.improvements)


def test_slow_steps() -> None:
    steps = [
        step("a", "x", latency_ms=100.0),
        step("b", "y", latency_ms=120.0),
        step("c", "z", latency_ms=1000.0),
    ]
    r = reflect(steps=steps, outcome="success", reward=1.0, reference=None)
    assert r.improvements == ["step c.z was slow (1000 ms)"]
    explicit = reflect(steps=steps, outcome="success", reward=1.0, reference=None, slow_ms=110.0)
    assert explicit.improvements == [
        "step b.y was slow (120 ms)",
        "step c.z was slow (1000 ms)",
    ]
    two = reflect(steps=steps[1:], outcome="success", reward=1.0, reference=None)
    assert not any("slow" in s for s in two.improvements)  # too few latencies to judge


def test_reference_unneeded_and_missing_steps() -> None:
    reference = ["search.web", "llm.answer"]
    r = reflect(
        steps=[step("search", "web"), step("fs", "list"), step("fs", "list", "error")],
        outcome="failure",
        reward=0.0,
        reference=reference,
    )
    assert "step fs.list was not needed by a similar successful episode" in r.improvements
    assert "missing step llm.answer that successful episodes use" in r.improvements
    assert not any("search.web was not needed" in s for s in r.improvements)
    assert "successful episodes use the order search.web, then llm.answer" in r.insights
    success = reflect(
        steps=[step("search", "web"), step("fs", "list")],
        outcome="success",
        reward=1.0,
        reference=reference,
    )
    assert not any("missing" in s for s in success.improvements)
    assert not any("order" in s for s in success.insights)


def test_lists_are_deduplicated_and_capped() -> None:
    steps = [step("t", f"a{i}", "error") for i in range(15)]
    r = reflect(steps=steps, outcome="failure", reward=0.0, reference=None)
    assert len(r.improvements) == MAX_ENTRIES
    assert r.improvements[0] == "error in t.a0 was not recovered"
    again = reflect(steps=steps, outcome="failure", reward=0.0, reference=None)
    assert again == r


def test_content_mentions_actions() -> None:
    r = reflect(
        steps=[step("search", "web", "error"), step("search", "cache")],
        outcome="success",
        reward=1.0,
        reference=None,
    )
    text = r.content(task_type="research")
    assert text.startswith("Reflection on research episode.")
    assert "search.web" in text
    assert "search.cache" in text
    assert "Successes:" in text
    assert "Insights:" in text
    assert "Improvements:" not in text  # empty sections are left out
    assert "\n" not in text
    empty = Reflection(successes=[], improvements=[], insights=[])
    assert empty.content(task_type=None) == "Reflection on episode. Nothing notable."
