"""Outcomes inferred from a turn: the last check, failures left, an interruption and the
user's next words; nothing is claimed without evidence."""

from __future__ import annotations

from typing import Any

import pytest

from app.learning.outcomes import (
    FAILURE,
    SUCCESS,
    UNKNOWN,
    Inferred,
    carries_on,
    from_reply,
    from_steps,
    revised,
)


def _check(action: str) -> str | None:
    return "test" if "pytest" in action else ("deploy" if "kubectl apply" in action else None)


def _steps(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"action": a, "status": s} for a, s in pairs]


def _infer(*pairs: tuple[str, str], interrupted: bool = False) -> Inferred:
    return from_steps(_steps(*pairs), interrupted=interrupted, check_of=_check)


def test_the_last_check_decides() -> None:
    passed = _infer(("edit app/*.py", "ok"), ("uv run pytest -q", "ok"))
    assert (passed.outcome, passed.labelled) == (SUCCESS, True)
    assert "uv run pytest -q" in passed.verdict()
    failed = _infer(
        ("uv run pytest -q", "ok"), ("edit app/*.py", "ok"), ("uv run pytest -q", "error")
    )
    assert failed.outcome == FAILURE
    fixed = _infer(
        ("uv run pytest -q", "error"), ("edit app/*.py", "ok"), ("uv run pytest -q", "ok")
    )
    assert fixed.outcome == SUCCESS


def test_a_failure_left_after_the_check_is_a_failure() -> None:
    found = _infer(("uv run pytest -q", "ok"), ("git push origin main", "error"))
    assert found.outcome == FAILURE
    assert "git push origin main" in found.verdict()


def test_no_evidence_claims_nothing() -> None:
    found = _infer(("edit app/*.py", "ok"), ("git commit -m <text>", "ok"))
    assert (found.outcome, found.labelled) == (UNKNOWN, False)
    assert _infer().outcome == UNKNOWN


def test_an_interruption_is_a_failure() -> None:
    assert _infer(("uv run pytest -q", "ok"), interrupted=True).outcome == FAILURE


def test_an_interruption_the_user_asks_to_go_on_from_judges_nothing() -> None:
    steps = _steps(("uv run pytest -q", "ok"))
    found = from_steps(steps, interrupted=True, check_of=_check, resumed=True)
    assert (found.outcome, found.labelled) == (UNKNOWN, False)
    # Asked to go on by a turn that was not cut short: its evidence stands.
    assert from_steps(steps, interrupted=False, check_of=_check, resumed=True).outcome == SUCCESS


@pytest.mark.parametrize(
    ("reply", "goes_on"),
    [
        ("sorry, hit esc by accident, carry on", True),
        ("continue", True),
        ("go on please", True),
        ("keep going", True),
        ("oops, didn't mean to stop you", True),
        ("no, that's wrong, continue with uv instead", False),
        ("great, carry on", False),  # approval: a success, not a carry-on
        ("add a discount field", False),
    ],
)
def test_asking_to_go_on_after_an_interruption(reply: str, goes_on: bool) -> None:
    assert carries_on(reply) is goes_on
    after = from_reply(reply, cut_short=True)
    assert (after is not None and after.outcome == UNKNOWN) is goes_on
    # A turn that was not cut short is not judged by such words.
    assert from_reply("keep going", cut_short=False) is None


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        ("that broke the build", FAILURE),
        ("the migration didn't apply", FAILURE),
        ("still failing on CI", FAILURE),
        ("no, use uv instead", FAILURE),
        ("great, thanks! now add a migration", SUCCESS),
        ("looks good", SUCCESS),
        ("it works now", SUCCESS),
        ("ok please fix that", FAILURE),
        ("hm, can you sort that out", FAILURE),
        ("it fails, can you fix it?", FAILURE),
        ("fix the failing cart tests", None),
        ("can you fix this bug in the cart?", None),
        ("deploy to staging", None),
        ("add an error message for empty emails", None),
    ],
)
def test_the_users_next_words(reply: str, outcome: str | None) -> None:
    found = from_reply(reply)
    assert (found.outcome if found else None) == outcome


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        ("there's no release page for v1.2.0 on github", FAILURE),
        ("the v1.2.0 tag isn't on github", FAILURE),
        ("there is no new column in the table", FAILURE),
        ("api pods are in ImagePullBackOff on staging", FAILURE),
        ("the deploy is stuck, it timed out", FAILURE),
        ("release 1.3.0 please", None),
    ],
)
def test_plainer_words_on_the_same_work(reply: str, outcome: str | None) -> None:
    found = from_reply(reply, same_work=True)
    assert (found.outcome if found else None) == outcome
    assert from_reply(reply) is None  # on other work they judge nothing


def test_the_user_outweighs_the_session() -> None:
    before = _infer(("uv run pytest -q", "ok"))
    after = revised(before, from_reply("that broke the build"))
    assert after is not None
    assert after.outcome == FAILURE
    agreed = revised(before, from_reply("thanks!"))
    assert agreed is not None
    assert agreed.confidence > before.confidence
    assert revised(before, from_reply("now deploy it")) is None


def test_a_failure_the_last_check_came_after_is_settled_by_it() -> None:
    # `pytest -q` was not found, `uv run pytest -q` ran it and passed.
    found = _infer(("pytest -q", "error"), ("uv run pytest -q", "ok"))
    assert found.outcome == SUCCESS
