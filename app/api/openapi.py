"""OpenAPI additions: schemas of bodies parsed by DirectRoutes, the dataset's rows, the
refusals every route can give, and the bearer scheme."""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, TypeAdapter

from app.api.body import BODY_MODELS
from app.core.errors import ErrorModel, RateLimitedModel, ValidationErrorModel
from app.schemas.service import dataset_row_schemas

REF = "#/components/schemas/{model}"


def install_openapi(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title, version=app.version, summary=app.summary, routes=app.routes
        )
        components = schema.setdefault("components", {})
        schemas = components.setdefault("schemas", {})
        for name, annotation in BODY_MODELS.items():
            body = TypeAdapter(annotation).json_schema(ref_template=REF)
            schemas.update(body.pop("$defs", {}))
            schemas[name] = body
        for model in (ErrorModel, ValidationErrorModel, RateLimitedModel):
            body = model.model_json_schema(ref_template=REF)
            schemas.update(body.pop("$defs", {}))
            schemas[model.__name__] = body
        schemas.update(dataset_row_schemas())
        _restore_examples(schemas)
        _answers(schema)
        _one_error_shape(schema)
        _refusals(schema)
        components["securitySchemes"] = {
            "bearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "An Engram API key (`egk_...`), as `Authorization: Bearer <key>` "
                "or `X-API-Key: <key>`; not needed in open mode (no key exists, loopback only)",
            }
        }
        schema["security"] = [{"bearer": []}]
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _one_error_shape(schema: dict[str, Any]) -> None:
    """Every operation may answer 422 (NUL in a query, say), in the one error shape.

    FastAPI documents its own 422 body (HTTPValidationError) on routes that declare none;
    the service answers every 422 with the error shape, so the document says so.
    """
    invalid = _error(
        "Invalid field: `field` names the first, `errors` lists all", "ValidationErrorModel"
    )
    for operations in schema["paths"].values():
        for operation in operations.values():
            operation.setdefault("responses", {})["422"] = invalid
    schemas = schema["components"]["schemas"]
    for name in ("HTTPValidationError", "ValidationError"):
        if f'"{REF.format(model=name)}"' not in json.dumps(schema["paths"]):
            schemas.pop(name, None)


def _error(description: str, model: str = "ErrorModel") -> dict[str, Any]:
    schema = {"$ref": REF.format(model=model)}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _refusals(schema: dict[str, Any]) -> None:
    """What RequestGuard and BodyLimits refuse before any route runs, on every operation
    they can reach: a foreign Host (400), a cross-site page (403), and for a body a
    media type other than JSON (415), too many bytes (413) or too slow a sender (408)."""
    host = "`Host` not served here (UntrustedHost; see ENGRAM_ALLOWED_HOSTS)"
    cross = "A cross-site request (CrossOriginRefused; `Origin` not in ENGRAM_CORS_ORIGINS)"
    for operations in schema["paths"].values():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            _add(responses, "400", host)
            _add(responses, "403", cross)
            if method in ("post", "put", "patch") and "requestBody" in operation:
                _add(responses, "413", "The body is over ENGRAM_LIMITS__MAX_BODY_BYTES")
                _add(responses, "415", "The body is not sent as `Content-Type: application/json`")
                _add(
                    responses, "408", "The body did not arrive within ENGRAM_LIMITS__BODY_TIMEOUT_S"
                )


def _add(responses: dict[str, Any], code: str, description: str) -> None:
    """Document `code` in the error shape, or add its reason to the one documented."""
    if code in responses:
        responses[code]["description"] += f"; or: {description[0].lower()}{description[1:]}"
    else:
        responses[code] = _error(description)


def _models(base: type[BaseModel]) -> list[type[BaseModel]]:
    found = []
    for sub in base.__subclasses__():
        found += [sub, *_models(sub)]
    return found


def _restore_examples(schemas: dict[str, Any]) -> None:
    """The models' own examples, nulls included: FastAPI drops every null from the
    document it generates, which leaves examples of nullable fields invalid."""
    by_name: dict[str, list[Any]] = {}
    for model in _models(BaseModel):
        extra = model.model_config.get("json_schema_extra")
        if isinstance(extra, dict) and "examples" in extra:
            by_name.setdefault(model.__name__, []).append(extra["examples"])
    for name, found in by_name.items():
        if name in schemas and len(found) == 1:
            schemas[name]["examples"] = found[0]


REPLAYED = {
    "description": "`true` when this is the first answer to an earlier request with the "
    "same Idempotency-Key, sent again (nothing was written this time)",
    "schema": {"type": "string", "enum": ["true"]},
}
LOCATION = {
    "description": "The created record's path (GET it for the whole record)",
    "schema": {"type": "string"},
}


def _answers(schema: dict[str, Any]) -> None:
    """Success answers described by what they hold (FastAPI says "Successful Response"),
    with the headers the routes send: Location for a created record that has a path of
    its own, Idempotent-Replayed where an Idempotency-Key is taken."""
    schemas = schema["components"]["schemas"]
    paths = schema["paths"]
    for path, operations in paths.items():
        for method, operation in operations.items():
            idempotent = any(
                p["name"] == "Idempotency-Key" for p in operation.get("parameters", [])
            )
            for code, answer in operation.get("responses", {}).items():
                if not code.startswith("2"):
                    continue
                if answer.get("description") == "Successful Response":
                    answer["description"] = _holds(code, answer, schemas)
                headers = answer.setdefault("headers", {})
                if idempotent:
                    headers["Idempotent-Replayed"] = REPLAYED
                if code == "201" and method == "post" and _readable_one(paths, path):
                    headers["Location"] = LOCATION
                if not headers:
                    del answer["headers"]


def _holds(code: str, answer: dict[str, Any], schemas: dict[str, Any]) -> str:
    body = (answer.get("content") or {}).get("application/json", {}).get("schema")
    if body is None:
        return "Done; no body"
    many = body.get("type") == "array"
    ref = (body.get("items", {}) if many else body).get("$ref", "")
    found: str = schemas.get(ref.rsplit("/", 1)[-1], {}).get("description", "Done")
    if many:
        found = f"A list, each item: {found[0].lower()}{found[1:]}"
    return f"Created: {found[0].lower()}{found[1:]}" if code == "201" else found


def _readable_one(paths: dict[str, Any], path: str) -> bool:
    """Whether `path/{id}` can be read (GET): where a created record's Location points."""
    return any(
        re.fullmatch(re.escape(path) + r"/\{[^/]+\}", other) and "get" in operations
        for other, operations in paths.items()
    )
