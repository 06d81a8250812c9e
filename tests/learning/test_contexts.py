"""Procedures per context: which field (or pair) decides a task type's procedure, the
procedure of each of its values, and the general one, from messy episodes."""

from __future__ import annotations

import random

from app.learning.contexts import describe_context, in_context, plan
from app.learning.mining import context_features, context_fields
from app.learning.skills import EpisodeView
from tests.learning.messy import NODE, PYTHON, by_language, by_pair, messy


def steps_by_context(window: list[EpisodeView]) -> dict[str, tuple[str, ...]]:
    found = plan(window, min_support=10, step_share=0.8)
    return {describe_context(dict(k)): p.steps for k, p in found.specific.items()}


def test_the_language_decides_and_each_language_gets_its_whole_procedure() -> None:
    for seed in range(3):
        window = messy(300, by_language, seed=seed)
        found = plan(window, min_support=10, step_share=0.8)
        assert found.fields == ("language",)
        assert steps_by_context(window) == {
            "language=python": tuple(PYTHON),
            "language=node": tuple(NODE),
        }
        # Every episode has a language: no general procedure, though both share a step.
        assert found.general is None


def test_a_pair_of_fields_decides_when_neither_alone_does() -> None:
    window = messy(400, by_pair, seed=4)
    found = plan(window, min_support=10, step_share=0.8)
    assert found.fields == ("features.cloud", "language")
    assert steps_by_context(window) == {
        "features.cloud=aws, language=python": tuple(PYTHON),
        "features.cloud=gcp, language=python": (*PYTHON[:3], "gcloud.deploy"),
        "features.cloud=aws, language=node": tuple(NODE),
        "features.cloud=gcp, language=node": (*NODE[:3], "gcloud.deploy"),
    }


def test_one_procedure_everywhere_stays_one_general_procedure() -> None:
    window = messy(300, lambda _: PYTHON, seed=5)
    found = plan(window, min_support=10, step_share=0.8)
    assert found.fields == ()
    assert found.specific == {}
    assert found.general is not None
    assert found.general.steps == tuple(PYTHON)


def test_episodes_without_the_field_keep_a_general_procedure() -> None:
    """Tagged episodes need one more step; the untagged rest are the general group."""

    def tagged(fields: dict[str, str]) -> list[str]:
        return [*PYTHON[:3], "docs.publish", PYTHON[3]] if "tag.ci" in fields else PYTHON

    found = plan(messy(400, tagged, seed=6), min_support=10, step_share=0.8)
    assert found.fields == ("tag.ci",)
    assert {k: p.steps for k, p in found.specific.items()} == {
        (("tag.ci", "true"),): (*PYTHON[:3], "docs.publish", PYTHON[3])
    }
    assert found.general is not None
    assert found.general.steps == tuple(PYTHON)


def test_a_habit_the_failures_share_is_not_a_step() -> None:
    """Node agents start 85% of their episodes with `shell.pwd`, successes and failures
    alike: it is in most successes, but the episodes without it do as well. The required
    steps are those whose absence fails (the near misses show it)."""
    rng = random.Random(7)
    window = []
    for e in messy(400, by_language, seed=7):
        if dict(e.context)["language"] == "node" and rng.random() < 0.85:
            actions, statuses = ("shell.pwd", *e.actions), ("ok", *e.statuses)
            e = EpisodeView(e.id, actions, statuses, e.success, e.reward, e.context)
        window.append(e)
    assert steps_by_context(window)["language=node"] == tuple(NODE)


def test_a_value_never_seen_matches_no_context() -> None:
    window = messy(300, by_language, seed=8)
    found = plan(window, min_support=10, step_share=0.8)
    rust = EpisodeView("r", (), (), True, 1.0, (("language", "rust"),))
    assert not any(in_context(rust, dict(k)) for k in found.specific)
    assert found.general is None


def test_context_fields_name_tags_and_features_as_triggers_do() -> None:
    fields = context_fields(
        domain="web",
        language="node",
        tags=["ci", "ci", "mono"],
        features={"db": "postgres", "n": 3.0, "fast": True, "none": None, "ratio": 0.5},
    )
    assert fields == {
        "domain": "web",
        "language": "node",
        "tag.ci": "true",
        "tag.mono": "true",
        "features.db": "postgres",
        "features.fast": "true",
        "features.n": "3",
        "features.ratio": "0.5",
    }
    assert describe_context({"tag.ci": "true", "language": "node"}) == "language=node, tag=ci"
    # Mining counts the same fields; a tag reads as it always did.
    assert context_features(tags=["ci"], features={"db": "pg"}) == ["tag=ci", "features.db=pg"]


def test_differing_contexts_are_seen_before_each_has_enough_for_a_skill() -> None:
    """16 successes, 7 and 9 per language: too few for a skill of either (10), enough to
    see that the languages' procedures differ, so the step they share is no skill."""
    window = messy(30, by_language, seed=3)
    assert plan(window, min_support=10, step_share=0.8).general is not None  # the shared step
    found = plan(window, min_support=10, step_share=0.8, detect_support=5)
    assert found.fields == ("language",)
    assert found.general is None
    assert {k: (p.steps, p.successes) for k, p in found.specific.items()} == {
        (("language", "python"),): (tuple(PYTHON), 9),
        (("language", "node"),): (tuple(NODE), 7),
    }
