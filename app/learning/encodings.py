"""The dataset's codes for memory types, statuses and sensitivity levels (the type_index,
status_index and sensitivity_level features): a name's code is its place in the list.

Written out rather than taken from the enums' order, so that editing an enum cannot
silently change what a code means in downloaded data. A code once given never changes:
a new name is appended (its code is the next number) and the version goes up; a name is
never removed or moved. tests/learning/test_encodings.py fails when an enum and its
encoding disagree, or when an encoding changes without its version.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Encoding:
    """Names in code order, and the version of that list."""

    version: int
    names: tuple[str, ...]

    def code(self, name: str) -> float:
        return float(self.names.index(name))


MEMORY_TYPES = Encoding(
    version=1,
    names=(
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
)
MEMORY_STATUSES = Encoding(
    version=1,
    names=("active", "superseded", "contradicted", "quarantined", "deleted", "expired"),
)
# An ordinal: higher is more sensitive.
SENSITIVITY_LEVELS = Encoding(version=1, names=("low", "medium", "high", "restricted"))
