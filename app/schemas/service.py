"""Documented shapes of the probes, the dataset's rows and its metadata."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.services.dataset.columns import TABLES, Column, Kind

_NULLABLE = "; null when unknown or not given"


class Health(BaseModel):
    """Liveness: the process answers."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"status": "ok"}]})

    status: Literal["ok"] = Field(description="Always `ok`: an answer at all means alive")


class Readiness(BaseModel):
    """Readiness: whether both stores answer (200 when they do, 503 otherwise)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"status": "ready", "stores": {"sql": "ok", "blobs": "ok"}}]
        }
    )

    status: Literal["ready", "unavailable"] = Field(
        description="`ready` when every store answers, else `unavailable` (with a 503)"
    )
    stores: dict[str, str] = Field(
        description="Per store (`sql`, `blobs`): `ok`, or `unavailable: <reason>`"
    )
    search_index: dict[str, Any] | None = Field(
        default=None,
        description="The in-process search index's size and state, where one is kept "
        "(SQLite); absent otherwise, and for a caller without an operator key",
    )
    replica: dict[str, Any] | None = Field(
        default=None,
        description="libSQL's embedded replica: `lag_s` (seconds since it last synced from "
        "the server), its `sync_interval_s`, `syncs` and `failures` (for an operator key "
        "only)",
    )
    search: dict[str, Any] | None = Field(
        default=None,
        description="`mode`: how memories are searched by default (lexical, or hybrid with "
        "an embedder); `embeddings`: the model, the vector size, the memories `pending` "
        "(not embedded yet), how many this process `embedded` and at what rate "
        "(`per_second`), and the vector index's state (for an operator key only)",
    )


class DatasetMetadata(BaseModel):
    """How to read the dataset: its columns, feature layouts, indices and reward spec."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "schema_version": "2",
                    "tables": {"transitions": "one row per completed recall"},
                    "fields": {"pscore": "probability of the logged selection"},
                    "stability": "a row is exported once a reward completes its transition",
                    "request_features": ["token_budget", "k"],
                    "candidate_features": ["present", "retrieval_score"],
                    "candidate_slots": 32,
                    "observation_length": 517,
                    "type_index": ["constraint", "preference"],
                    "type_index_version": 1,
                    "status_index": ["active"],
                    "status_index_version": 1,
                    "sensitivity_level": ["low", "medium", "high", "restricted"],
                    "sensitivity_level_version": 1,
                    "action_catalogue": ["constraint", "context", "suppressed"],
                    "reward_spec": {"version": "recall-v1"},
                    "exploration": {
                        "policy_id": "baseline_v0",
                        "scheme": "epsilon_move",
                        "epsilon": 0.1,
                    },
                    "policies": [
                        {"id": "baseline_v0", "version": 3, "kind": "rules", "status": "active"}
                    ],
                }
            ]
        }
    )

    schema_version: str = Field(description="Version of the row layout (`X-Schema-Version`)")
    tables: dict[str, str] = Field(description="Each table's name and what one row is")
    fields: dict[str, str] = Field(description="The transitions table's columns explained")
    stability: str = Field(description="When a row is exported and whether it can change")
    request_features: list[str] = Field(description="Names of the request features, in order")
    candidate_features: list[str] = Field(
        description="Names of each candidate slot's features, in order"
    )
    candidate_slots: int = Field(description="Candidate slots per observation")
    observation_length: int = Field(description="Length of `observations`")
    type_index: list[str] = Field(description="Memory types by their `type_index` feature value")
    type_index_version: int = Field(description="Version of `type_index`")
    status_index: list[str] = Field(description="Memory statuses by `status_index` value")
    status_index_version: int = Field(description="Version of `status_index`")
    sensitivity_level: list[str] = Field(description="Sensitivities by `sensitivity_level` value")
    sensitivity_level_version: int = Field(description="Version of `sensitivity_level`")
    action_catalogue: list[str] = Field(description="Every mode a candidate can be logged with")
    reward_spec: dict[str, Any] = Field(description="How a reward's scalar is computed")
    exploration: dict[str, Any] = Field(description="The logging policy's exploration scheme")
    policies: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Every policy a row's `policy_id` can name: id, version, kind, status and "
        "parent (the namespace's learned policies, and baseline_v0)",
    )


# What a column of each kind is in JSON Schema (an NDJSON line; Parquet's types match).
_KIND: dict[Kind, dict[str, Any]] = {
    "string": {"type": "string"},
    "int64": {"type": "integer"},
    "float64": {"type": "number"},
    "bool": {"type": "boolean"},
    "timestamp": {"type": "string", "format": "date-time"},
    "list<string>": {"type": "array", "items": {"type": "string"}},
    "list<int64>": {"type": "array", "items": {"type": "integer"}},
    "list<float64>": {"type": "array", "items": {"type": "number"}},
}
# The columns the dataset's own declaration leaves undescribed.
_NOTES = {
    "schema_version": "Version of the row layout, as in `X-Schema-Version`",
    "transition_id": "Id of the recall (the transition)",
    "task_id": "The recall's task id" + _NULLABLE,
    "agent_id": "The recall's agent id" + _NULLABLE,
    "task_type": "The recall's task type" + _NULLABLE,
    "policy_id": "The logging policy",
    "policy_version": "The logging policy's version",
    "created_at": "When the recall was made (UTC)",
    "completed_at": "When the reward completed the transition (UTC)",
    "position": "The candidate's slot, from 0",
    "memory_id": "The candidate memory",
    "logged_mode": "The mode it was recalled in, or `suppressed`",
    "selected": "Whether the policy selected it",
    "pscore": "Probability of it being selected under the logging policy",
    "rewards": "Scalar reward of the transition (see reward_spec)",
    "explored": "Whether exploration changed the greedy selection",
}
_NULLS = {"task_id", "agent_id", "task_type", "next_transition_id", "next_observations"}
_FIGURES = {
    "slots": "`candidate_slots`",
    "width": "`observation_length`",
    "request_features": "`len(request_features)`",
    "candidate_features": "`len(candidate_features)`",
}


def _column(column: Column) -> dict[str, Any]:
    if column.description is not None:
        text = column.description.format(**_FIGURES)
    elif column.name.startswith("feature_"):
        text = f"Candidate feature `{column.name.removeprefix('feature_')}` (/v1/rl/metadata)"
    else:
        text = _NOTES[column.name]
    schema = {**_KIND[column.kind], "description": text[0].upper() + text[1:]}
    if column.name in _NULLS:
        schema["type"] = [schema["type"], "null"]
    return schema


def dataset_row_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schema of one row of each dataset table, by component name."""
    return {
        f"Dataset{name.title()}Row": {
            "type": "object",
            "title": f"Dataset{name.title()}Row",
            "description": f"The `{name}` table: {table.description} (see /v1/rl/metadata)",
            "properties": {c.name: _column(c) for c in table.columns},
            "required": [c.name for c in table.columns],
        }
        for name, table in TABLES.items()
    }


def _example_row() -> dict[str, Any]:
    """A candidates row, every column filled as the export fills it."""
    values: dict[Kind, Any] = {"string": "", "int64": 0, "float64": 0.0, "bool": False}
    row = {c.name: values.get(c.kind) for c in TABLES["candidates"].columns}
    named = {
        "schema_version": "2",
        "transition_id": "rc_01HZX3",
        "task_id": "fix-login-bug",
        "task_type": "code_fix",
        "policy_id": "baseline_v0",
        "created_at": "2026-01-31T12:00:00Z",
        "position": 0,
        "memory_id": "mem_01HZX2",
        "feature_present": 1.0,
        "logged_mode": "constraint",
        "selected": True,
        "pscore": 0.95,
        "rewards": 1.0,
    }
    return row | named


def dataset_answer(media_types: dict[str, str]) -> dict[str, Any]:
    """The dataset's 200 answer, for the formats offered (format name by media type)."""
    rows = [{"$ref": f"#/components/schemas/{name}"} for name in dataset_row_schemas()]
    shapes: dict[str, dict[str, Any]] = {
        "ndjson": {
            "schema": {
                "oneOf": rows,
                "description": "Each line is one row of the table asked for, a JSON object",
            },
            "example": _example_row(),
        },
        "parquet": {
            "schema": {
                "type": "string",
                "contentMediaType": "application/vnd.apache.parquet",
                "description": "A Parquet file of the table asked for; its columns are the "
                "row schema's, with Arrow types (string, int64, float64, bool, "
                "timestamp[us, UTC], lists)",
            }
        },
    }
    return {
        "description": "Completed transitions, oldest first: NDJSON streamed "
        "(`format=ndjson`, the default) or a Parquet attachment (`format=parquet`)",
        "headers": {
            "X-Schema-Version": {
                "description": "Version of the row layout (see /v1/rl/metadata)",
                "schema": {"type": "string"},
            },
            "Link": {
                "description": '`<url>; rel="next"` when more rows follow this download: '
                "the same query with the next `cursor`",
                "schema": {"type": "string"},
            },
            "Content-Disposition": {
                "description": 'Parquet only: `attachment; filename="engram-<table>.parquet"`',
                "schema": {"type": "string"},
            },
        },
        "content": {media: shapes[name] for media, name in media_types.items()},
    }
