"""The shapes the simulated world speaks in: an Engram episode's steps and context."""

from __future__ import annotations

from typing import Literal, TypedDict

Status = Literal["ok", "error"]
# The values of a task type's context fields, in the order of its `fields`.
Key = tuple[str | None, ...]


class Step(TypedDict):
    """One executed action, in the shape of an Engram episode step."""

    tool: str
    action: str
    status: Status
    latency_ms: float
    tokens: int


class Context(TypedDict, total=False):
    """Where an attempt happens, in the shape of an Engram episode's context."""

    domain: str
    language: str
    tags: list[str]
    features: dict[str, str]


def field_value(context: Context | None, name: str) -> str | None:
    """A context field as Engram names it: `language`, `domain`, `tag.<t>`, `features.<f>`."""
    ctx = context or Context()
    if name.startswith("features."):
        return ctx.get("features", {}).get(name.removeprefix("features."))
    if name.startswith("tag."):
        return "true" if name.removeprefix("tag.") in ctx.get("tags", []) else None
    if name == "language":
        return ctx.get("language")
    if name == "domain":
        return ctx.get("domain")
    raise ValueError(f"unknown context field {name!r}")
