"""The dataset's codes for memory types, statuses and sensitivity levels change only by
appending, with a new version, and the enums follow them."""

from __future__ import annotations

from enum import StrEnum

import pytest

from app.learning.encodings import MEMORY_STATUSES, MEMORY_TYPES, SENSITIVITY_LEVELS, Encoding
from app.schemas.memory import MemoryStatus, MemoryType, Sensitivity

# Every version of each encoding that has been released, as it was: downloaded data
# holds these codes. A new version is added here, never an old one edited.
RELEASED: dict[str, dict[int, tuple[str, ...]]] = {
    "type_index": {
        1: (
            "constraint",
            "preference",
            "fact",
            "profile",
            "episode",
            "reflection",
            "skill",
            "procedure",
            "task_state",
            "project_state",
            "tool_memory",
            "document_reference",
        ),
    },
    "status_index": {
        1: ("active", "superseded", "contradicted", "quarantined", "deleted", "expired"),
    },
    "sensitivity_level": {1: ("low", "medium", "high", "restricted")},
}
CASES = [
    pytest.param("type_index", MEMORY_TYPES, MemoryType, id="type_index"),
    pytest.param("status_index", MEMORY_STATUSES, MemoryStatus, id="status_index"),
    pytest.param("sensitivity_level", SENSITIVITY_LEVELS, Sensitivity, id="sensitivity_level"),
]


@pytest.mark.parametrize(("feature", "encoding", "enum"), CASES)
def test_the_enum_lists_the_encoding_in_code_order(
    feature: str, encoding: Encoding, enum: type[StrEnum]
) -> None:
    """A member added, removed or moved in the enum fails here: append it to the encoding
    in app/learning/encodings.py with a new version (and add it to RELEASED), and keep
    the enum in code order."""
    assert [m.value for m in enum] == list(encoding.names), feature


@pytest.mark.parametrize(("feature", "encoding", "enum"), CASES)
def test_encodings_only_grow_and_each_change_has_a_version(
    feature: str, encoding: Encoding, enum: type[StrEnum]
) -> None:
    released = RELEASED[feature]
    assert released.get(encoding.version) == encoding.names, (
        f"{feature}: changed without a new version (or its version is not in RELEASED)"
    )
    assert sorted(released) == list(range(1, encoding.version + 1))
    for version, names in released.items():
        # A released code keeps its meaning in every later version.
        assert encoding.names[: len(names)] == names, (feature, version)
