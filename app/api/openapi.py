"""OpenAPI additions: schemas of bodies parsed by DirectRoutes, and the bearer scheme."""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import TypeAdapter

from app.api.body import BODY_MODELS

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
        _one_error_shape(schema)
        components["securitySchemes"] = {
            "bearer": {"type": "http", "scheme": "bearer", "description": "An Engram API key"}
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
    invalid = {
        "description": "Invalid field",
        "content": {"application/json": {"schema": {"$ref": REF.format(model="ErrorModel")}}},
    }
    for operations in schema["paths"].values():
        for operation in operations.values():
            operation.setdefault("responses", {})["422"] = invalid
    schemas = schema["components"]["schemas"]
    for name in ("HTTPValidationError", "ValidationError"):
        if REF.format(model=name) not in json.dumps(schema["paths"]):
            schemas.pop(name, None)
