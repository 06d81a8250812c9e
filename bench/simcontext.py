"""The simulated world with context: procedures that depend on the attempt's context.

Its task types are written out, as real workflows: releasing a library tags it in git,
then builds, tests and publishes it with the language's tools; deploying an API builds
an image, pushes and deploys it with the cloud's tools, then checks it over HTTP;
migrating a database backs it up, migrates with the language's tool and verifies with the
database's client, so it depends on the pair (language, features.db); fixing CI depends
on nothing. Procedures of one type share their first or last step.

Every attempt's context holds every field: those the type does not depend on (a domain,
a tag, a runner feature, the other types' fields) take random values, so a learner must
find the field that matters. Each field has a value kept out of training (language rust,
cloud azure, db sqlite) whose procedure the world knows too, for test time.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping

from bench.simshapes import Context, Key
from bench.simworld import TaskType, World, precision_recall

# (action, recovery) in workflow order; a recovery sorts right after its action.
ACTIONS: list[tuple[str, str]] = [
    ("git.checkout", "git.stash"),
    ("git.tag", "git.fetch"),
    ("db.backup", "db.vacuum"),
    ("docker.build", "docker.prune"),
    ("python.build", "pip.install"),
    ("npm.build", "npm.ci"),
    ("cargo.build", "cargo.update"),
    ("alembic.upgrade", "alembic.stamp"),
    ("knex.migrate", "knex.unlock"),
    ("diesel.migrate", "diesel.setup"),
    ("lint.fix", "lint.clear_cache"),
    ("pytest.run", "pytest.rerun"),
    ("npm.test", "npm.rebuild"),
    ("cargo.test", "cargo.clean"),
    ("psql.verify", "psql.reconnect"),
    ("mysql.verify", "mysql.reconnect"),
    ("sqlite.verify", "sqlite.repair"),
    ("ecr.push", "aws.login"),
    ("gcr.push", "gcloud.auth"),
    ("acr.push", "az.login"),
    ("twine.upload", "twine.check"),
    ("npm.publish", "npm.login"),
    ("cargo.publish", "cargo.login"),
    ("ecs.deploy", "ecs.rollback"),
    ("run.deploy", "run.rollback"),
    ("aks.deploy", "kubectl.rollout"),
    ("ci.rerun", "ci.retry"),
    ("http.check", "http.retry"),
]
RECOVERY = dict(ACTIONS)
ORDER = {name: i for i, name in enumerate(name for pair in ACTIONS for name in pair)}
# Actions no procedure needs: what agents also do.
DISTRACTORS = [
    "shell.ls",
    "git.log",
    "git.diff",
    "env.print",
    "docs.build",
    "cache.clear",
    "slack.notify",
    "jira.comment",
]

# field -> (values seen in training, the value kept for test time)
FIELDS: dict[str, tuple[tuple[str, ...], str]] = {
    "language": (("python", "node"), "rust"),
    "features.cloud": (("aws", "gcp"), "azure"),
    "features.db": (("postgres", "mysql"), "sqlite"),
}
# Fields no procedure depends on.
DOMAINS = ("web", "cli", "data")
TAGS = ("ci", "nightly", "hotfix")
RUNNERS = ("linux", "macos")

# A step is one action, or (field, action per value of that field).
Slot = str | tuple[str, dict[str, str]]
TEMPLATES: dict[str, tuple[tuple[str, ...], list[Slot]]] = {
    "release-lib": (
        ("language",),
        [
            "git.tag",
            ("language", {"python": "python.build", "node": "npm.build", "rust": "cargo.build"}),
            ("language", {"python": "pytest.run", "node": "npm.test", "rust": "cargo.test"}),
            (
                "language",
                {"python": "twine.upload", "node": "npm.publish", "rust": "cargo.publish"},
            ),
        ],
    ),
    "deploy-api": (
        ("features.cloud",),
        [
            "docker.build",
            ("features.cloud", {"aws": "ecr.push", "gcp": "gcr.push", "azure": "acr.push"}),
            ("features.cloud", {"aws": "ecs.deploy", "gcp": "run.deploy", "azure": "aks.deploy"}),
            "http.check",
        ],
    ),
    "migrate-db": (
        ("language", "features.db"),
        [
            "db.backup",
            (
                "language",
                {"python": "alembic.upgrade", "node": "knex.migrate", "rust": "diesel.migrate"},
            ),
            (
                "features.db",
                {"postgres": "psql.verify", "mysql": "mysql.verify", "sqlite": "sqlite.verify"},
            ),
        ],
    ),
    "fix-ci": ((), ["git.checkout", "lint.fix", "ci.rerun"]),
}


def context_world(seed: int, *, fail_rate: float = 0.15, distractors: int = 5) -> World:
    """The world of TEMPLATES; the seed picks each type's distractors."""
    world = World(seed, task_types=0, fail_rate=fail_rate)
    for name, (fields, slots) in TEMPLATES.items():
        values = [(*FIELDS[f][0], FIELDS[f][1]) for f in fields]
        procedures: dict[Key, list[str]] = {}
        for key in itertools.product(*values):
            chosen = dict(zip(fields, key, strict=True))
            procedures[key] = [s if isinstance(s, str) else s[1][chosen[s[0]]] for s in slots]
        steps = {a for p in procedures.values() for a in p}
        recoveries = {a: RECOVERY[a] for a in sorted(steps)}
        extra = world.rng.sample(DISTRACTORS, distractors)
        vocabulary = sorted({*steps, *recoveries.values(), *extra}, key=_rank)
        world.task_types.append(
            TaskType(name, procedures, recoveries, vocabulary=vocabulary, fields=fields)
        )
    return world


def _rank(action: str) -> tuple[int, str]:
    return ORDER.get(action, len(ORDER)), action


def sample_context(rng: random.Random, *, values: Mapping[str, str] | None = None) -> Context:
    """A context with every field at a random training value, except those in `values`."""
    chosen = {name: rng.choice(seen) for name, (seen, _) in FIELDS.items()}
    domain, tag, runner = rng.choice(DOMAINS), rng.choice(TAGS), rng.choice(RUNNERS)
    chosen.update(values or {})  # drawn first all the same, so the stream does not shift
    features = {
        k.removeprefix("features."): v for k, v in chosen.items() if k.startswith("features.")
    }
    return Context(
        language=chosen["language"],
        domain=domain,
        tags=[tag],
        features={**features, "runner": runner},
    )


def training_keys(task: TaskType) -> list[Key]:
    """The contexts (values of its fields) a type is trained in: () for a type without."""
    return list(itertools.product(*(FIELDS[f][0] for f in task.fields)))


def unseen_key(task: TaskType) -> Key:
    """The type's context never seen in training: each of its fields at its test value."""
    return tuple(FIELDS[f][1] for f in task.fields)


def values_of(task: TaskType, key: Key) -> dict[str, str]:
    """The fields of a context key by name: {"language": "node"}."""
    return {f: v for f, v in zip(task.fields, key, strict=True) if v is not None}


def label(task: TaskType, key: Key) -> str:
    """`release-lib language=node` (a type without fields: `fix-ci any`)."""
    fields = ", ".join(f"{f}={v}" for f, v in values_of(task, key).items())
    return f"{task.name} {fields or 'any'}"


def quality(
    world: World, learned: Mapping[tuple[str, Key], list[str] | None]
) -> dict[tuple[str, Key], tuple[float, float]]:
    """Precision and recall of the steps learned per (type, context) against the truth."""
    return {
        (name, key): precision_recall(steps or [], world.task_type(name).procedures[key])
        for (name, key), steps in learned.items()
    }
