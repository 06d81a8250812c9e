"""The metadata document describing the dataset (GET /v1/rl/metadata)."""

from __future__ import annotations

from typing import Any

from app.core.config import Recall as RecallSettings
from app.learning.encodings import MEMORY_STATUSES, MEMORY_TYPES, SENSITIVITY_LEVELS
from app.learning.features import CANDIDATE_FEATURES, REQUEST_FEATURES, SCHEMA_VERSION
from app.learning.policy import MODES, POLICY_ID
from app.learning.rewards import RECALL_SPEC
from app.services.dataset.columns import TABLES, TRANSITIONS


def metadata(settings: RecallSettings) -> dict[str, Any]:
    slots = settings.candidate_slots
    width = len(REQUEST_FEATURES) + slots * len(CANDIDATE_FEATURES)
    figures = {
        "slots": slots,
        "width": width,
        "request_features": len(REQUEST_FEATURES),
        "candidate_features": len(CANDIDATE_FEATURES),
    }
    return {
        "schema_version": SCHEMA_VERSION,
        "tables": {name: table.description for name, table in TABLES.items()},
        "fields": {
            c.name: c.description.format(**figures)
            for c in TRANSITIONS.columns
            if c.description is not None
        },
        "stability": (
            "a row is exported once a reward completes its transition and never changes "
            "after: its episode boundary (terminations, next_transition_id, "
            "next_observations) is decided by then, so incremental downloads (cursor, "
            "since) need not fetch it again"
        ),
        "request_features": REQUEST_FEATURES,
        "candidate_features": CANDIDATE_FEATURES,
        "candidate_slots": slots,
        "observation_length": width,
        "type_index": list(MEMORY_TYPES.names),
        "type_index_version": MEMORY_TYPES.version,
        "status_index": list(MEMORY_STATUSES.names),
        "status_index_version": MEMORY_STATUSES.version,
        "sensitivity_level": list(SENSITIVITY_LEVELS.names),
        "sensitivity_level_version": SENSITIVITY_LEVELS.version,
        "action_catalogue": [*MODES, "suppressed"],
        "reward_spec": RECALL_SPEC,
        "exploration": {
            "policy_id": POLICY_ID,
            "scheme": "epsilon_move",
            "epsilon": settings.epsilon,
        },
    }
