"""Procedures per context: which field (or pair) decides a task type's procedure, the
procedure of each of its values, and the general one, from messy episodes."""

from __future__ import annotations

import random
from collections.abc import Callable

from app.learning.contexts import describe_context, in_context, plan
from app.learning.mining import context_features, context_fields
from app.learning.skills import EpisodeView

SHARED = "git.tag"
PYTHON = [SHARED, "pip.build", "pytest.run", "twine.upload"]
NODE = [SHARED, "npm.build", "npm.test", "npm.publish"]
NOISE = ["shell.ls", "shell.cat", "http.get", "docker.build", "make.build", "git.status"]
Procedures = Callable[[dict[str, str]], list[str]]


def messy(n: int, procedure_of: Procedures, *, seed: int) -> list[EpisodeView]:
    """Half succeed (the context's procedure, 0-3 noise steps, a retried error in 30%), a
    quarter near misses (one step left out), a quarter random; every episode has a
    language, a cloud feature and irrelevant fields (domain, a team feature, a tag)."""
    rng = random.Random(seed)
    known = sorted({a for ctx in contexts() for a in procedure_of(ctx)} | set(NOISE))
    out = []
    for i in range(n):
        fields = {
            "language": rng.choice(["python", "node"]),
            "features.cloud": rng.choice(["aws", "gcp"]),
            "domain": rng.choice(["web", "cli"]),
            "features.team": rng.choice(["a", "b", "c"]),
        }
        if rng.random() < 0.3:
            fields["tag.ci"] = "true"
        procedure = procedure_of(fields)
        statuses: list[str] | None = None
        draw = rng.random()
        if draw < 0.5:
            actions = list(procedure)
            for _ in range(rng.randint(0, 3)):
                actions.insert(rng.randint(0, len(actions)), rng.choice(NOISE))
            statuses = ["ok"] * len(actions)
            if rng.random() < 0.3:
                j = rng.randrange(len(actions))
                actions.insert(j, actions[j])
                statuses.insert(j, "error")
        elif draw < 0.75:
            actions = list(procedure)
            del actions[rng.randrange(len(actions))]
        else:
            actions = rng.sample(known, rng.randint(3, 6))
        out.append(
            EpisodeView(
                id=f"e{i}",
                actions=tuple(actions),
                statuses=tuple(statuses or ["ok"] * len(actions)),
                success=draw < 0.5,
                reward=1.0 if draw < 0.5 else -1.0,
                context=tuple(sorted(fields.items())),
            )
        )
    return out


def contexts() -> list[dict[str, str]]:
    return [
        {"language": lang, "features.cloud": c}
        for lang in ("python", "node")
        for c in ("aws", "gcp")
    ]


def by_language(fields: dict[str, str]) -> list[str]:
    return PYTHON if fields.get("language") == "python" else NODE


def by_pair(fields: dict[str, str]) -> list[str]:
    steps = by_language(fields)
    return [*steps[:3], "gcloud.deploy"] if fields.get("features.cloud") == "gcp" else steps


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
