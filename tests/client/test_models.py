"""The client's models against the server's /openapi.json: every field the client
declares is one the server has, of a type the receiving side accepts, and required
exactly where the server requires it; so a change of the API fails here first."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from engram_client import models
from engram_client.models import Request, Response
from tests.server import EngramServer

REF = "#/components/schemas/{model}"
CLIENT_MODELS = [
    getattr(models, name) for name in models.__all__ if name not in ("Request", "Response")
]


@pytest.fixture(scope="module")
def components(server: EngramServer) -> dict[str, Any]:
    document = httpx.get(f"{server.url}/openapi.json").json()
    schemas: dict[str, Any] = document["components"]["schemas"]
    return schemas


def variants(schema: dict[str, Any], defs: dict[str, Any]) -> list[tuple[str, Any]]:
    """The JSON kinds a schema allows, each with its item schema for arrays."""
    if "anyOf" in schema or "oneOf" in schema:
        options = schema.get("anyOf") or schema.get("oneOf") or []
        return [v for s in options for v in variants(s, defs)]
    if "$ref" in schema:
        target = defs[schema["$ref"].rsplit("/", 1)[-1]]
        return [(target.get("type", "object"), None)] if "enum" in target else [("object", None)]
    kind = schema.get("type")
    if kind is None:
        return [("any", None)]
    kinds = kind if isinstance(kind, list) else [kind]
    return [(k, schema.get("items") if k == "array" else None) for k in kinds]


def accepts(
    taker: dict[str, Any], t_defs: dict[str, Any], given: dict[str, Any], g_defs: dict[str, Any]
) -> bool:
    """Every value `given` allows is one `taker` accepts (an integer is a number)."""
    taken = variants(taker, t_defs)
    for kind, items in variants(given, g_defs):
        if not any(
            t == "any"
            or (t == kind or (t == "number" and kind == "integer"))
            and (
                kind != "array"
                or not (t_items and items)
                or accepts(t_items, t_defs, items, g_defs)
            )
            for t, t_items in taken
        ):
            return False
    return True


@pytest.mark.parametrize("model", CLIENT_MODELS, ids=lambda m: m.__name__)
def test_client_model_matches_the_server_schema(
    model: type[BaseModel], components: dict[str, Any]
) -> None:
    assert model.__name__ in components, f"the server has no schema {model.__name__}"
    server = components[model.__name__]
    mine = model.model_json_schema(ref_template=REF)
    my_defs = {**mine.get("$defs", {}), model.__name__: mine}
    server_required = set(server.get("required", []))
    my_required = set(mine.get("required", []))
    for name, field in mine["properties"].items():
        assert name in server["properties"], f"{model.__name__}.{name}: not in the API"
        theirs = server["properties"][name]
        if issubclass(model, Request):
            # Left-out optional fields are not sent (exclude_none), so their null is not.
            sent = dict(field)
            if name not in my_required and "anyOf" in field:
                sent = {"anyOf": [s for s in field["anyOf"] if s.get("type") != "null"]}
            assert accepts(theirs, components, sent, my_defs), f"{model.__name__}.{name}"
        else:
            assert issubclass(model, Response)
            assert accepts(field, my_defs, theirs, components), f"{model.__name__}.{name}"
        assert (name in my_required) == (name in server_required), (
            f"{model.__name__}.{name}: required here {name in my_required}, "
            f"on the server {name in server_required}"
        )
    missing = server_required - set(mine["properties"])
    assert not missing, f"{model.__name__}: the server requires {missing}"


def test_the_check_fails_on_drift(components: dict[str, Any]) -> None:
    """A field of the wrong type, or one the server lacks, is caught."""

    class EpisodeSummary(Response):
        id: int  # the server sends a string

    mine = EpisodeSummary.model_json_schema(ref_template=REF)
    theirs = components["EpisodeSummary"]["properties"]["id"]
    assert not accepts(mine["properties"]["id"], {}, theirs, components)
    assert accepts({"type": "number"}, {}, {"type": "integer"}, {})
    assert "ghost" not in components["EpisodeSummary"]["properties"]


def test_every_client_field_is_described() -> None:
    undescribed = [
        f"{model.__name__}.{name}"
        for model in CLIENT_MODELS
        for name, info in model.model_fields.items()
        if not info.description
    ]
    assert undescribed == []
