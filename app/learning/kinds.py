"""Kinds of work (pure): the prompts of a project that ask for the same kind of work, in
whatever words, share a kind.

A prompt is reduced to its terms: lower-case words without the words of any request
("please", "can", "you"), numbers and versions, each stemmed and mapped to the concept it
names in software work (ship, publish, cut -> release). A kind keeps, for each term, how
many of its prompts held it. A new prompt joins the kind whose prompts' terms cover it
best, each term weighted by how rare it is among the project's prompts (a word every kind
uses tells nothing), when that cover reaches the threshold; otherwise it starts a kind of
its own. With an embedder, a kind also keeps the sum of its prompts' sentence vectors, and
a prompt whose meaning is close to a kind's joins it even in words it never used ("let's
get v3.1 out" and "cut release 3.1"): of the two measures, the better counts. A kind asked
for in several ways ("add notes to invoices", "let's store notes on invoices") has no one
centre: it also keeps up to EXAMPLES of its prompts' vectors, the most unlike each other,
and a prompt close to its nearest few counts as close to the kind. A kind is named once,
at its birth, by its most telling terms, so that the episodes and skills filed under it
stay together as prompts keep arriving. A later prompt of a session that complains of the
turn before ("it fails, fix it", "CI is red on the release commit") goes on with that
turn's kind, and is not counted into it: the fix is part of the same work.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from app.learning.tokens import STOP_WORDS

Vector = NDArray[np.float32]

NAME_TERMS = 3
# A later prompt of a session that judges the turn before goes on with its kind unless
# another kind covers it more than twice as well ("CI is red on the release commit").
GO_ON_SHARE = 0.5
MAX_TERMS = 400  # a kind keeps its most frequent terms
CONCEPT_WEIGHT = 3.0
UNSEEN_WEIGHT = 0.3
# Meaning: a prompt's cosine to a kind's mean vector counts as a cover of
# (cosine - MEANING_FLOOR) / MEANING_SPAN, so a kind is joined on meaning from 0.5 on. With
# all-MiniLM-L6-v2, bench/agentworld.py's held-out asks score above that against their
# kind's prompts (a young kind's only just) and hardly reach it against another kind's.
# Where two kinds are in reach, the better one wins.
MEANING_FLOOR = 0.35
# A prompt's cosine to a kind is also its mean to the kind's NEIGHBOURS closest examples:
# of the agent world's held-out asks, 97 of 105 come within reach of their kind, against
# 86 by the mean alone; 1 of another kind's by either (python -m bench.kind_meaning).
EXAMPLES = 16
NEIGHBOURS = 3
# A prompt filed under a kind that never had a skill is answered with what the nearest
# established kind learned, if that scores NEAR_SHARE of the threshold ("take google to 5.2").
NEAR_SHARE = 0.5
MEANING_SPAN = 0.5
_WORD = re.compile(r"[a-z][a-z0-9]*(?:[-'][a-z0-9]+)*")

# Words of asking, not of the work asked for.
_REQUEST_WORDS = frozenset(
    """please pls can could would you we us let lets let's want wanted need needs needed
    like go going gonna get got make sure help hey hi ok okay now today quick quickly
    just also again another new some thing things stuff one bit real actually maybe
    should must time right first next then via using use""".split()
    # Greetings and replies to the turn before: they say how it went, not what to do.
    + """morning evening hello hey thanks thank thx cheers great good perfect awesome nice
    cool yes yep yeah sure continue ahead still keep going looks look lgtm done ty np
    worked sorry oops accident accidentally esc hit carry proceed resume""".split()
)

# Concepts of software work: each line is a concept and the words that name it.
_CONCEPTS = """
release release ship publish cut tag
migration migration migrate schema column table alembic
test test tests spec specs failing fail failure broken red flaky pytest jest
deploy deploy deployment rollout roll staging production prod
dependency dependency dependencies deps package packages library upgrade lockfile bump latest
fix fix repair resolve solve bug issue
docs docs documentation readme changelog
refactor refactor cleanup clean restructure rename
build build compile bundle
lint lint format formatting style
"""


def _concepts() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in _CONCEPTS.strip().splitlines():
        concept, *words = line.split()
        for word in words:
            out[_stem(word)] = concept
    return out


def _stem(word: str) -> str:
    """A light suffix stripper: enough to join a verb's and a noun's forms."""
    # Not "ment": "shipments" is not "ship".
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            if suffix == "es" and not word.endswith(("ses", "xes", "zes", "ches", "shes")):
                continue  # "invoices" loses its s, "pushes" its es
            stem = word[: -len(suffix)]
            return stem + "y" if suffix == "ies" else stem
    return word


_CONCEPT_OF = _concepts()
_CONCEPT_NAMES = frozenset(_CONCEPT_OF.values())


def prompt_terms(text: str) -> list[str]:
    """The prompt's terms, each once, in order of first appearance."""
    out: dict[str, None] = {}
    for word in _WORD.findall(text.lower()[:4000]):
        if word in STOP_WORDS or word in _REQUEST_WORDS or len(word) < 2:
            continue
        if any(ch.isdigit() for ch in word):
            continue  # versions, numbers, ids: the specifics of one request
        stem = _stem(word)
        # "released" loses its ed to "releas": the concept is found by its word too.
        concept = _CONCEPT_OF.get(stem) or _CONCEPT_OF.get(stem + "e") or _CONCEPT_OF.get(word)
        out[concept or stem] = None
    return list(out)


@dataclass
class Kind:
    """A kind of work of one project: its name and its prompts' term counts."""

    id: str
    name: str
    prompts: int = 0
    terms: dict[str, int] = field(default_factory=dict)
    meaning: Vector | None = None  # the sum of its prompts' unit vectors (one model's)
    examples: Vector | None = None  # some of those vectors, a row each (EXAMPLES)


def _weight(term: str, kinds: Sequence[Kind]) -> float:
    """A term's weight in telling the project's kinds apart: held by fewer kinds weighs
    more, a concept of software work (which names the work, where other words name its
    specifics) more still, and a term no kind holds yet little: a table name or a file seen
    for the first time says nothing of which kind the prompt is."""
    holders = sum(1 for k in kinds if k.terms.get(term))
    weight = math.log((1 + len(kinds)) / (1 + holders)) + 1.0
    if holders == 0:
        weight *= UNSEEN_WEIGHT
    return weight * (CONCEPT_WEIGHT if term in _CONCEPT_NAMES else 1.0)


def cover(terms: Sequence[str], kind: Kind, *, kinds: Sequence[Kind]) -> float:
    """How well the kind's prompts cover these terms, 0 to 1 (telling terms weigh more)."""
    if not terms or kind.prompts == 0:
        return 0.0
    weights = {t: _weight(t, kinds) for t in terms}
    got = sum(w * min(1.0, kind.terms.get(t, 0) / kind.prompts) for t, w in weights.items())
    return got / sum(weights.values())


def meaning_cover(vector: Vector | None, kind: Kind) -> float:
    """The prompt's vector against the kind's mean one, or against its nearest examples
    when they are closer, on cover's scale (0 without a vector or a meaning)."""
    if vector is None or kind.meaning is None:
        return 0.0
    norm = float(np.linalg.norm(kind.meaning))
    if norm == 0.0:
        return 0.0
    cosine = float(vector @ kind.meaning) / norm
    if kind.examples is not None:  # one model's, as the mean
        nearest = np.sort(kind.examples @ vector)[-NEIGHBOURS:]
        cosine = max(cosine, float(nearest.mean()))
    return min(1.0, max(0.0, (cosine - MEANING_FLOOR) / MEANING_SPAN))


def score(
    terms: Sequence[str], kind: Kind, *, kinds: Sequence[Kind], vector: Vector | None = None
) -> float:
    """How well the prompt belongs to the kind: its words' cover or its meaning's, the
    better of the two."""
    return max(cover(terms, kind, kinds=kinds), meaning_cover(vector, kind))


def closest(
    terms: Sequence[str],
    kinds: Sequence[Kind],
    *,
    threshold: float,
    vector: Vector | None = None,
) -> tuple[Kind | None, float]:
    """The kind the prompt belongs to and its score (None: none reaches the threshold).
    Among the kinds it reaches, a kind's score counts in proportion prompts / (prompts + 1):
    a kind of one prompt, whose words and meaning are that prompt's alone, does not draw
    a prompt that an established kind fits nearly as well."""
    best: Kind | None = None
    best_score = best_rank = 0.0
    top = 0.0
    for kind in kinds:
        c = score(terms, kind, kinds=kinds, vector=vector)
        top = max(top, c)
        if c < threshold:
            continue
        rank = c * kind.prompts / (kind.prompts + 1)
        if rank > best_rank or (rank == best_rank and best is not None and kind.id < best.id):
            best, best_score, best_rank = kind, c, rank
    if best is None:
        return None, top
    return best, best_score


def nearest_established(
    terms: Sequence[str],
    kind: Kind,
    kinds: Sequence[Kind],
    *,
    taught: Collection[str],
    learned: Collection[str],
    threshold: float,
    vector: Vector | None = None,
) -> Kind | None:
    """For a prompt filed under `kind`, the kind of the project with an active skill (one
    of `taught`) it comes closest to (at least NEAR_SHARE of the threshold); None when no
    such kind is near, or when `kind` is established: one of `learned`, the kinds that
    have had a skill (one whose skill retired borrows none). However many prompts a kind
    has, it is not established until it learned something."""
    if kind.id in learned:
        return None
    others = [k for k in kinds if k.id != kind.id]  # the words' weights without the young kind
    best, best_score = None, NEAR_SHARE * threshold
    for other in others:
        if other.id not in taught:
            continue
        c = score(terms, other, kinds=others, vector=vector)
        if c > best_score or (c == best_score and best is not None and other.id < best.id):
            best, best_score = other, c
    return best


def goes_on(
    terms: Sequence[str], previous: Kind, kinds: Sequence[Kind], *, vector: Vector | None = None
) -> bool:
    """Whether a prompt that judges the session's turn before (a complaint, a "still
    failing") goes on with that turn's kind: true unless another kind of the project
    fits it more than twice as well as the previous one ("the release never went out"
    after a release goes on; "fix the failing cart test" after it is new work)."""
    _, best = closest(terms, kinds, threshold=0.0, vector=vector)
    return score(terms, previous, kinds=kinds, vector=vector) >= GO_ON_SHARE * best


def name_for(terms: Sequence[str], kinds: Sequence[Kind]) -> str:
    """A new kind's name: its most telling terms (concepts first, then rare words)."""
    ranked = sorted(terms, key=lambda t: (-_weight(t, kinds), terms.index(t)))
    chosen = ranked[:NAME_TERMS]
    return "-".join(sorted(chosen, key=terms.index)) or "general"


def unique_name(name: str, taken: Mapping[str, object]) -> str:
    if name not in taken:
        return name
    n = 2
    while f"{name}-{n}" in taken:
        n += 1
    return f"{name}-{n}"


def add_prompt(kind: Kind, terms: Sequence[str], vector: Vector | None = None) -> None:
    """Count a prompt's terms (and its vector) into its kind (the rarest terms are dropped
    past MAX_TERMS)."""
    examples = None if vector is None else vector[np.newaxis, :]
    fold(kind, Kind(kind.id, kind.name, 1, dict.fromkeys(terms, 1), vector, examples))


def fold(kind: Kind, other: Kind) -> None:
    """Count another kind's prompts (terms and meaning) into this one: a prompt, or a kind
    whose work turned out to be this one's."""
    kind.prompts += other.prompts
    if other.meaning is not None:
        kind.meaning = (
            other.meaning.copy() if kind.meaning is None else kind.meaning + other.meaning
        )
    if other.examples is not None:
        mine = [] if kind.examples is None else [kind.examples]  # one model's, as the sums
        kind.examples = _distinct(np.concatenate([*mine, other.examples]), EXAMPLES)
    for term, n in other.terms.items():
        kind.terms[term] = kind.terms.get(term, 0) + n
    if len(kind.terms) > MAX_TERMS:
        kept = sorted(kind.terms.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_TERMS]
        kind.terms = dict(kept)


def _distinct(examples: Vector, keep: int) -> Vector:
    """At most `keep` examples, spanning the kind's ways of asking: the older of the two
    most alike goes until they fit."""
    rows = list(examples)
    while len(rows) > keep:
        m = np.stack(rows)
        alike = m @ m.T
        np.fill_diagonal(alike, -np.inf)
        i, j = np.unravel_index(int(np.argmax(alike)), alike.shape)
        del rows[min(int(i), int(j))]
    return np.stack(rows).astype(np.float32)
