"""JSON bodies parsed straight into their model by pydantic-core.

FastAPI's own body handling decodes JSON with the standard library and then
validates the resulting dict; on the ingest path that is a large share of the
CPU per request. Routes that take a body this way declare it in OpenAPI with
`json_body(Model)`, and errors keep FastAPI's shape (loc starts with "body").
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, TypeAdapter, ValidationError

M = TypeVar("M")

# Models documented through json_body(); main.py adds their schemas to OpenAPI.
BODY_MODELS: dict[str, Any] = {}


def json_body(name: str, annotation: Any) -> dict[str, Any]:
    """openapi_extra for a route whose body is `annotation`, registered under `name`."""
    BODY_MODELS[name] = annotation
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}},
        }
    }


async def parse_body(request: Request, adapter: TypeAdapter[M] | type[BaseModel]) -> Any:
    raw = await request.body()
    try:
        if isinstance(adapter, TypeAdapter):
            return adapter.validate_json(raw)
        return adapter.model_validate_json(raw)
    except ValidationError as exc:
        errors = [
            {**err, "loc": ("body", *err.get("loc", ()))} for err in exc.errors(include_url=False)
        ]
        raise RequestValidationError(errors) from None


class DirectRoute(APIRoute):
    """An APIRoute whose endpoint takes the Request and returns a Response itself.

    FastAPI's per-request machinery (dependency solving, body decoding, response
    validation) is skipped; OpenAPI is generated from the route's declaration as
    usual. Errors raised by the endpoint go through the app's exception handlers.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        endpoint: Callable[[Request], Coroutine[Any, Any, Response]] = self.endpoint
        return endpoint
