"""OpenAPI additions: schemas of bodies parsed by DirectRoutes, and the bearer scheme."""

from __future__ import annotations

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
        components["securitySchemes"] = {
            "bearer": {"type": "http", "scheme": "bearer", "description": "An Engram API key"}
        }
        schema["security"] = [{"bearer": []}]
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
