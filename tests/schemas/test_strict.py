"""Request models refuse a NUL character anywhere in a value, and say where; a number field
refuses true and false."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from app.schemas.episode import EpisodeCreate, StepCreate
from app.schemas.memory import MemoryCreate
from app.schemas.recall import RecallRequest
from app.schemas.strict import nul_at


def test_where_a_nul_is() -> None:
    assert nul_at("fine") is None
    assert nul_at("a\x00") == ""
    assert nul_at({"a": [1, {"b": "x\x00"}]}) == "a[1].b"
    assert nul_at({"k\x00": 1}) == "k\\u0000"
    assert nul_at(["ok", ("t", "\x00")]) == "[1][1]"
    # The six characters \u0000 are text, not a NUL.
    assert nul_at({"a": "\\u0000"}) is None


@pytest.mark.parametrize(
    ("model", "body", "loc", "inside"),
    [
        (MemoryCreate, {"type": "fact", "content": "a\x00b"}, ("content",), ""),
        (
            MemoryCreate,
            {"type": "fact", "content": "x", "metadata": {"n": ["\x00"]}},
            ("metadata",),
            "n[0]",
        ),
        (
            EpisodeCreate,
            {"task_id": "t", "steps": [{"action": "x", "input": {"cmd": "a\x00"}}]},
            ("steps", 0, "input"),
            "cmd",
        ),
        (RecallRequest, {"task": "deploy\x00", "token_budget": 100}, ("task",), ""),
    ],
)
def test_a_nul_is_refused_naming_the_field(
    model: type, body: dict[str, object], loc: tuple[object, ...], inside: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(body)
    [error] = [e for e in caught.value.errors() if "NUL" in e["msg"]]
    assert error["loc"] == loc
    assert error["msg"].endswith(f"(at {inside})" if inside else "are not accepted")


def test_text_without_a_nul_passes() -> None:
    episode = EpisodeCreate.model_validate(
        {"task_id": "t", "steps": [{"action": "x", "input": {"cmd": "echo \\u0000 ok"}}]}
    )
    assert episode.steps[0].input == {"cmd": "echo \\u0000 ok"}


@pytest.mark.parametrize(
    ("model", "body", "field"),
    [
        (StepCreate, {"action": "a", "latency_ms": False}, "latency_ms"),
        (StepCreate, {"action": "a", "tokens": True}, "tokens"),
        (MemoryCreate, {"type": "fact", "content": "c", "confidence": True}, "confidence"),
    ],
)
def test_a_number_field_refuses_true_and_false(
    model: type[BaseModel], body: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError, match="a number is expected, not true or false") as raised:
        model.model_validate(body)
    assert raised.value.errors()[0]["loc"] == (field,)
    # Numbers pass, and so do booleans where a boolean is asked for.
    model.model_validate({**body, field: 1})
