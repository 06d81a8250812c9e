"""Kinds of work from prompts: the same work in other words shares a kind, other work does
not, and a kind's name holds still as prompts arrive."""

from __future__ import annotations

import numpy as np

from app.learning.kinds import (
    EXAMPLES,
    Kind,
    Vector,
    add_prompt,
    closest,
    goes_on,
    meaning_cover,
    name_for,
    nearest_established,
    prompt_terms,
    unique_name,
)

THRESHOLD = 0.3


def _file(prompts: list[str]) -> tuple[list[Kind], list[str]]:
    kinds: list[Kind] = []
    names = []
    for prompt in prompts:
        terms = prompt_terms(prompt)
        kind, _ = closest(terms, kinds, threshold=THRESHOLD)
        if kind is None:
            name = unique_name(name_for(terms, kinds), {k.name: k for k in kinds})
            kind = Kind(id=str(len(kinds)), name=name)
            kinds.append(kind)
        add_prompt(kind, terms)
        names.append(kind.name)
    return kinds, names


def test_the_same_work_in_other_words_shares_a_kind() -> None:
    _, names = _file(
        [
            "cut release 1.4.2",
            "can you ship version 2.0.1?",
            "tag and publish a new patch release",
            "add a migration for the orders table",
            "we need a new column discount on invoices, write the migration",
            "the cart tests are failing, fix them",
            "test_checkout is red, can you repair it",
            "prepare 3.1.0 for release please",
        ]
    )
    release, migration, tests = names[0], names[3], names[5]
    assert len({release, migration, tests}) == 3
    assert names == [release, release, release, migration, migration, tests, tests, release]


def test_a_kind_keeps_its_name_as_prompts_arrive() -> None:
    kinds, names = _file(["deploy to staging"] + ["roll out main to staging please"] * 5)
    assert set(names) == {"deploy"}
    assert len(kinds) == 1
    assert kinds[0].prompts == 6


def test_specifics_and_asking_words_are_not_terms() -> None:
    assert prompt_terms("Could you please bump requests to 2.31.0 now?") == [
        "dependency",
        "request",
    ]
    assert prompt_terms("") == []
    assert (
        prompt_terms("please can you just do it") == ["it"]
        or prompt_terms("please can you just do it") == []
    )


def test_names_are_unique_in_a_project() -> None:
    assert unique_name("release", {"release": 1, "release-2": 1}) == "release-3"
    assert unique_name("deploy", {}) == "deploy"


def test_a_complaint_goes_on_with_the_turn_before_unless_it_names_other_work() -> None:
    kinds, names = _file(
        ["cut release 1.4.2", "ship version 2.0.1", "the cart tests are failing, fix them"]
    )
    release, tests = kinds[0], kinds[1]
    assert names == [release.name, release.name, tests.name]
    # "CI is red on the release commit" names the release as much as the tests.
    assert goes_on(prompt_terms("CI is red on the release commit"), release, kinds)
    assert goes_on(prompt_terms("the release never went out"), release, kinds)
    # Another kind's work, named plainly, is not the release's fix.
    assert not goes_on(prompt_terms("fix the failing checkout tests"), release, kinds)


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_a_prompt_close_in_meaning_joins_a_kind_its_words_never_named() -> None:
    release = Kind("0", "release")
    migration = Kind("1", "migration")
    add_prompt(release, prompt_terms("cut release 1.4.2"), _unit(1, 0.1, 0))
    add_prompt(release, prompt_terms("ship version 2.0.1"), _unit(1, 0, 0.1))
    add_prompt(migration, prompt_terms("add a column, write the migration"), _unit(0, 1, 0))
    kinds = [release, migration]
    terms = prompt_terms("let's get v3.1.3 out")
    assert terms == []
    # By its words alone the prompt is no kind's; by its meaning it is the release's.
    assert closest(terms, kinds, threshold=THRESHOLD) == (None, 0.0)
    kind, score = closest(terms, kinds, threshold=THRESHOLD, vector=_unit(0.95, 0.2, 0.1))
    assert kind is release
    assert score > 0.9
    # Other work is neither's.
    kind, _ = closest(terms, kinds, threshold=THRESHOLD, vector=_unit(0.3, 0.3, 1))
    assert kind is None
    # The kind's meaning is the sum of its prompts' vectors.
    assert release.meaning is not None
    assert np.allclose(release.meaning, _unit(1, 0.1, 0) + _unit(1, 0, 0.1))


def test_a_kind_asked_for_in_two_ways_is_near_to_both() -> None:
    migration, deploy = Kind("0", "migration"), Kind("1", "deploy")
    for i in range(8):  # "add a notes column to invoices", mostly
        add_prompt(migration, ["column"], _unit(1, 0.02 * i, 0, 0))
    for i in range(3):  # "let's store notes on invoices", now and then
        add_prompt(migration, ["store"], _unit(0.05 * i, 1, 0, 0))
    for _ in range(4):
        add_prompt(deploy, ["deploy"], _unit(0, 0, 1, 0))
    kinds = [migration, deploy]
    asked = _unit(0.1, 1, 0.1, 0.2)
    assert migration.meaning is not None
    mean = migration.meaning / np.linalg.norm(migration.meaning)
    assert float(asked @ mean) < 0.5  # out of reach of the kind's mean vector
    kind, score = closest([], kinds, threshold=THRESHOLD, vector=asked)
    assert kind is migration  # its nearest prompts reach it
    assert score > 0.9
    # Other work is still no kind's.
    assert closest([], kinds, threshold=THRESHOLD, vector=_unit(0.3, 0.3, 0.3, 1))[0] is None


def test_a_kind_keeps_the_prompts_least_alike() -> None:
    kind = Kind("0", "release")
    rare = [_unit(0, 1, 0), _unit(0, 0, 1), _unit(0, 1, 1)]
    for i in range(EXAMPLES + 10):
        add_prompt(kind, ["release"], _unit(1, 0.001 * i, 0))
        if i in (3, 9, 15):
            add_prompt(kind, ["release"], rare.pop())
    assert kind.examples is not None
    assert kind.examples.shape == (EXAMPLES, 3)
    # The three unlike the rest stay, and the latest of the alike ones.
    for v in (_unit(0, 1, 0), _unit(0, 0, 1), _unit(0, 1, 1), _unit(1, 0.001 * 25, 0)):
        assert np.isclose(kind.examples @ v, 1.0, atol=1e-6).any()


def test_a_kind_without_a_meaning_is_judged_by_its_words() -> None:
    release = Kind("0", "release")
    add_prompt(release, prompt_terms("cut release 1.4.2"))
    assert release.meaning is None
    terms = prompt_terms("ship version 2.0.1")
    kind, score = closest(terms, [release], threshold=THRESHOLD, vector=_unit(0, 1, 0))
    assert kind is release
    assert score == closest(terms, [release], threshold=THRESHOLD)[1]


def test_shipments_are_not_a_release() -> None:
    assert "release" not in prompt_terms("add a column to the shipments table")
    assert prompt_terms("it ships as version 2") == ["release", "version"]


def test_a_kind_of_one_prompt_does_not_draw_what_an_established_kind_fits_as_well() -> None:
    provider, once = Kind("0", "provider-dependency"), Kind("1", "move-aws")
    for _ in range(5):
        add_prompt(provider, ["provider"], _unit(1, 0, 0))
    add_prompt(once, ["move"], _unit(0.6, 0.8, 0))
    kinds = [provider, once]
    asked = _unit(0.7, 0.45, 0.55)  # a little closer to the one prompt than to the five
    by_meaning = {k.name: meaning_cover(asked, k) for k in kinds}
    assert by_meaning["provider-dependency"] < by_meaning["move-aws"]
    assert by_meaning["provider-dependency"] >= 0.8 * by_meaning["move-aws"]
    # Both are in reach: the established kind wins, by its prompts.
    kind, score = closest([], kinds, threshold=THRESHOLD, vector=asked)
    assert kind is provider
    assert score == by_meaning["provider-dependency"]


def test_a_young_kind_is_answered_as_the_nearest_established_kind() -> None:
    provider, deploy = Kind("0", "provider-bump"), Kind("1", "deploy-staging")
    for _ in range(3):
        add_prompt(provider, ["provider", "bump"], _unit(1, 0, 0))
        add_prompt(deploy, ["deploy", "staging"], _unit(0, 1, 0))
    take = Kind("2", "take-google")
    terms = prompt_terms("please take google to 5.2")
    asked = _unit(0.45, 0.1, 0.9)  # cosine 0.44 to the provider bumps: short of joining them
    add_prompt(take, terms, asked)
    kinds = [provider, deploy, take]
    taught = {"0", "1"}  # the kinds with a skill to hand out

    def near(
        vector: Vector, taught: set[str] = taught, retired: frozenset[str] = frozenset()
    ) -> Kind | None:
        return nearest_established(
            terms, take, kinds, taught=taught, learned=taught | retired,
            threshold=THRESHOLD, vector=vector,
        )  # fmt: skip

    assert closest(terms, [provider, deploy], threshold=THRESHOLD, vector=asked)[0] is None
    assert near(asked) is provider
    # Nothing near: no answer borrowed.
    far = _unit(0.1, 0.1, 1)
    assert near(far) is None
    # Its own prompts do not make it established: a young kind answers as its neighbour
    # until it has learned a skill of its own.
    for _ in range(4):
        add_prompt(take, terms, asked)
    assert near(asked) is provider
    assert near(asked, {"0", "1", "2"}) is None
    # Nor once the skill it learned retired: its work is its own.
    assert near(asked, retired=frozenset({"2"})) is None
    # A neighbour without a skill lends nothing.
    assert near(asked, {"1"}) is None
