"""The dataset's tables, each column declared once: its name, type, description and where
its value comes from. The NDJSON lines, the Parquet schema and the metadata's `fields`
are derived from these lists (ndjson.py, parquet.py, metadata.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from operator import itemgetter
from typing import Any, Literal, get_args

from app.learning.features import CANDIDATE_FEATURES, SCHEMA_VERSION

# Arrow's names of the types (parquet.py maps them; pyarrow is imported only when used).
Kind = Literal[
    "string",
    "int64",
    "float64",
    "bool",
    "timestamp",
    "list<string>",
    "list<int64>",
    "list<float64>",
]


@dataclass(frozen=True, slots=True)
class Attr:
    """The transition's attribute `name` (a Transition's, or a column of the repository's
    RAW_COLUMNS of the same name), through `convert` if given."""

    name: str
    convert: Callable[[Any], Any] | None = None


@dataclass(frozen=True, slots=True)
class Const:
    value: Any


class Part(Enum):
    """Values of a transitions row computed from its state and action, or copied from the
    parts stored with it when the recall was logged."""

    LISTS = "lists"  # a key of features.dataset_lists, named as the column
    OBSERVATIONS = "observations"
    NEXT_OBSERVATIONS = "next_observations"


# A candidates row's own value: from (transition, position, candidate).
PerCandidate = Callable[[Any, int, dict[str, Any]], Any]


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    kind: Kind
    value: Attr | Const | Part | PerCandidate
    # In the metadata's fields; {slots}, {width}, {request_features} and
    # {candidate_features} are filled in with the settings' figures.
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Table:
    description: str
    columns: tuple[Column, ...]


def _is_none(value: Any) -> bool:
    return value is None


def _feature(name: str) -> PerCandidate:
    return lambda t, position, cand: cand["features"][name]


TRANSITIONS = Table(
    "one row per completed recall",
    (
        Column("schema_version", "string", Const(SCHEMA_VERSION)),
        Column("transition_id", "string", Attr("id")),
        Column("task_id", "string", Attr("task_id")),
        Column("agent_id", "string", Attr("agent_id")),
        Column("task_type", "string", Attr("task_type")),
        Column(
            "policy_id",
            "string",
            Attr("policy_id"),
            "the policy that decided (baseline_v0, or a learned one: see `policies`); "
            "pscore and inclusion_pscores are that policy's",
        ),
        Column("policy_version", "int64", Attr("policy_version"), "the deciding policy's version"),
        Column("created_at", "timestamp", Attr("created_at")),
        Column("completed_at", "timestamp", Attr("completed_at")),
        Column(
            "pscore",
            "float64",
            Attr("propensity"),
            "probability of the logged selection under the logging policy",
        ),
        Column("rewards", "float64", Attr("reward"), "scalar reward (see reward_spec)"),
        Column(
            "reward_source",
            "string",
            Attr("reward_source"),
            "null: a reward a client posted; `inferred`: Engram's, from how an agent's session "
            "went (scaled by its confidence; filter on this to train on posted rewards only)",
        ),
        Column(
            "terminations",
            "bool",
            Attr("next_id", _is_none),
            "true when no recall of the same task followed before the reward that "
            "completed this one; a later recall of the task starts a new episode",
        ),
        Column("truncations", "bool", Const(False), "always false"),
        Column(
            "next_transition_id",
            "string",
            Attr("next_id"),
            "the task's next recall made before this one was rewarded, or null",
        ),
        # The order of features.dataset_lists, which the stored parts were written in.
        Column(
            "selected",
            "list<string>",
            Part.LISTS,
            "selected memory ids, in the policy's priority order",
        ),
        Column(
            "explored",
            "bool",
            Part.LISTS,
            "true when exploration changed the greedy selection",
        ),
        Column(
            "candidate_ids",
            "list<string>",
            Part.LISTS,
            "memory id of each filled slot, in slot order",
        ),
        Column(
            "modes",
            "list<string>",
            Part.LISTS,
            "logged mode of each filled slot's candidate (or suppressed)",
        ),
        Column(
            "inclusion_pscores",
            "list<float64>",
            Part.LISTS,
            "per filled slot, probability of its candidate being selected",
        ),
        Column(
            "actions",
            "list<int64>",
            Part.LISTS,
            "{slots} slots, 1 where that slot's candidate was selected",
        ),
        Column(
            "observations",
            "list<float64>",
            Part.OBSERVATIONS,
            "{request_features} request features, then {slots} candidate slots of "
            "{candidate_features} features each, zero-padded (length {width})",
        ),
        Column(
            "next_observations",
            "list<float64>",
            Part.NEXT_OBSERVATIONS,
            "observations of that next recall, or null",
        ),
    ),
)

RETRIEVAL_PARTS: tuple[tuple[str, Kind, str], ...] = (
    ("lexical", "float64", "BM25 relevance relative to the query's best BM25 match, or null"),
    ("lexical_rank", "int64", "rank among the BM25 matches (from 1), or null"),
    ("dense", "float64", "cosine of the memory's vector to the query's, or null"),
    ("dense_rank", "int64", "rank among the vector matches (from 1), or null"),
    ("fused", "float64", "reciprocal rank fusion of both ranks (lexical mode: BM25's), or null"),
)


def _retrieval(part: str) -> PerCandidate:
    """How the candidate was found (null for constraints added without a text match, and
    for recalls logged before retrieval parts were)."""

    def value(t: Any, position: int, cand: dict[str, Any]) -> Any:
        return (cand.get("retrieval") or {}).get(part)

    return value


CANDIDATES = Table(
    "one row per recall and candidate, with its named features",
    (
        Column("schema_version", "string", Const(SCHEMA_VERSION)),
        Column("transition_id", "string", Attr("id")),
        Column("task_id", "string", Attr("task_id")),
        Column("task_type", "string", Attr("task_type")),
        Column("policy_id", "string", Attr("policy_id")),
        Column("created_at", "timestamp", Attr("created_at")),
        Column("position", "int64", lambda t, position, cand: position),
        Column("memory_id", "string", lambda t, position, cand: cand["memory_id"]),
        *[Column(f"feature_{name}", "float64", _feature(name)) for name in CANDIDATE_FEATURES],
        Column(
            "logged_mode",
            "string",
            lambda t, position, cand: t.action["modes"].get(cand["memory_id"], "suppressed"),
        ),
        Column(
            "selected", "bool", lambda t, position, cand: cand["memory_id"] in t.action["selected"]
        ),
        Column(
            "pscore",
            "float64",
            lambda t, position, cand: t.action["inclusion"].get(cand["memory_id"], 0.0),
        ),
        *[
            Column(f"retrieval_{part}", kind, _retrieval(part), doc)
            for part, kind, doc in RETRIEVAL_PARTS
        ],
        Column("rewards", "float64", Attr("reward")),
        Column("explored", "bool", Attr("action", itemgetter("explored"))),
    ),
)

TableName = Literal["transitions", "candidates"]
TABLES: dict[TableName, Table] = {"transitions": TRANSITIONS, "candidates": CANDIDATES}
if set(get_args(TableName)) != set(TABLES):
    raise TypeError("TableName must name the tables")


def reader(
    columns: tuple[Column, ...], read: Callable[[str], str]
) -> Callable[[Any], dict[str, Any]]:
    """A function of a transition `t` giving the values of the columns read from it alone
    (Attr, Const), by name in column order. `read(attr)` is the Python expression that
    reads the attribute from `t` ("t.id", or "t[0]" for a row read by position).

    Compiled once, as dataclasses and namedtuple compile their methods: what it runs is a
    dict display, as fast as one written by hand. The NDJSON export calls it for every
    line, where a loop over a getter per column would cost several times as much."""
    env: dict[str, Any] = {}
    items = []
    for i, column in enumerate(columns):
        value = column.value
        if isinstance(value, Const):
            env[f"const{i}"] = value.value
            expr = f"const{i}"
        elif isinstance(value, Attr):
            if not value.name.isidentifier():
                raise ValueError(f"not an attribute name: {value.name!r}")
            expr = read(value.name)
            if value.convert is not None:
                env[f"convert{i}"] = value.convert
                expr = f"convert{i}({expr})"
        else:
            continue
        items.append(f"{column.name!r}: {expr}")
    exec(f"def values(t):\n    return {{{', '.join(items)}}}", env)
    function: Callable[[Any], dict[str, Any]] = env["values"]
    return function
