"""The base of the request models: unknown fields, infinities and NaN are refused, and so is
a NUL character anywhere in a value, at every door (HTTP, MCP, hooks, importers, the CLI).
PostgreSQL cannot store one: it would fail the group commit that carries it. A number
field refuses true and false (pydantic would read them as 1 and 0)."""

from __future__ import annotations

import functools
import typing
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

NUL = "\x00"
MAX_DEPTH = 64  # deeper values are refused by the body limits long before


def nul_at(value: Any, path: str = "", depth: int = 0) -> str | None:
    """Where in `value` a NUL character is ("" for the value itself, `a.b[2]` inside it),
    or None."""
    if isinstance(value, str):
        return path if NUL in value else None
    if depth > MAX_DEPTH:
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            name = str(key).replace(NUL, "\\u0000")
            here = f"{path}.{name}" if path else name
            if isinstance(key, str) and NUL in key:
                return here
            found = nul_at(item, here, depth + 1)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = nul_at(item, f"{path}[{i}]", depth + 1)
            if found is not None:
                return found
    return None


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_nul(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool):
            if _numeric(cls, info.field_name or ""):
                raise ValueError("a number is expected, not true or false")
            return value
        if isinstance(value, str):
            if NUL not in value:
                return value
        elif not isinstance(value, dict | list) or _checks_itself(cls, info.field_name or ""):
            return value
        elif b"\\u0000" not in _json(value):
            return value  # (the usual case: one pass in C, no walk)
        where = nul_at(value)
        if where is not None:
            inside = f" (at {where})" if where else ""
            raise ValueError(f"NUL characters (\\u0000) are not accepted{inside}")
        return value


def _json(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:
        return b"\\u0000"  # not plain JSON: walk it


@functools.cache
def _checks_itself(model: type[BaseModel], field: str) -> bool:
    """Whether the field holds Strict models (or lists of them), which check their own."""
    info = model.model_fields.get(field)
    if info is None:
        return False
    kinds = [info.annotation]
    while kinds:
        kind = kinds.pop()
        if isinstance(kind, type) and issubclass(kind, Strict):
            return True
        kinds.extend(typing.get_args(kind))
    return False


@functools.cache
def _numeric(model: type[BaseModel], field: str) -> bool:
    """Whether the field holds a number (int or float, optional or not) and no bool."""
    info = model.model_fields.get(field)
    if info is None:
        return False
    kinds, found = [info.annotation], set()
    while kinds:
        kind = kinds.pop()
        if kind in (int, float, bool):
            found.add(kind)
        kinds.extend(typing.get_args(kind))
    return bool(found & {int, float}) and bool not in found
