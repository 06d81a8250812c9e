"""JSON bodies parsed straight into their model by pydantic-core.

FastAPI's own body handling decodes JSON with the standard library and then
validates the resulting dict; on the ingest path that is a large share of the
CPU per request. Routes that take a body this way declare it in OpenAPI with
`json_body(Model)`, and errors keep FastAPI's shape (loc starts with "body").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar
from urllib.parse import parse_qsl

import jiter
import orjson
from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, TypeAdapter, ValidationError
from starlette.requests import ClientDisconnect

M = TypeVar("M")

# Models documented through json_body(); main.py adds their schemas to OpenAPI.
BODY_MODELS: dict[str, Any] = {}

# A \u0000 escape (not an escaped backslash followed by "u0000"): PostgreSQL can store
# NUL in neither text nor jsonb, so it is refused on every backend, before any write.
_NUL_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")
# The pattern has no literal prefix, so the regex engine tries it at every byte of the
# body; a plain search for the escape rules out nearly every body for a fraction of that.
_NUL_TEXT = b"\\u0000"


class _Duplicate(dict[str, Any]):
    """An object that repeated a key (found only on the error path)."""

    key = ""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            found = _Duplicate(seen)
            found.key = key
            return found
        seen[key] = value
    return seen


def _path_to(node: Any, hit: Callable[[Any], tuple[Any, ...] | None]) -> tuple[Any, ...] | None:
    """The location of the first value for which `hit` gives a location, depth first."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((), node)]
    while stack:
        path, item = stack.pop()
        found = hit(item)
        if found is not None:
            return (*path, *found)
        if isinstance(item, dict):
            stack.extend(((*path, k), v) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(item))))
    return None


def _nul_at(item: Any) -> tuple[Any, ...] | None:
    if isinstance(item, str) and "\x00" in item:
        return ()
    if isinstance(item, dict):
        for key in item:
            if "\x00" in key:
                return (key,)
    return None


def _duplicate_at(item: Any) -> tuple[Any, ...] | None:
    return (item.key,) if isinstance(item, _Duplicate) else None


def _body_error(raw: bytes) -> RequestValidationError | None:
    """A NUL character or a repeated key in a JSON body, with the field it is in.

    Both are found cheaply (a byte search, jiter's duplicate check); only a body that has
    one is parsed a second time, to name its place."""
    if _NUL_TEXT in raw and _NUL_ESCAPE.search(raw) is not None:
        kind, msg, hit = "nul", "the NUL character (\\u0000) is not accepted in text", _nul_at
    else:
        try:
            jiter.from_json(raw, catch_duplicate_keys=True, cache_mode=False)
            return None
        except ValueError as exc:
            if "duplicate key" not in str(exc):
                return None  # not JSON: the model's validation says so
        kind, msg, hit = "duplicate_key", "this key is given twice in one object", _duplicate_at
    try:
        tree = json.loads(raw, object_pairs_hook=_pairs)
    except ValueError:
        tree = None
    loc = _path_to(tree, hit) if tree is not None else None
    return RequestValidationError([{"type": kind, "loc": ("body", *(loc or ())), "msg": msg}])


def _refuse_nul_query(request: Request) -> None:
    query: bytes = request.scope.get("query_string", b"")
    if b"%00" in query or b"\x00" in query:
        names = [k for k, v in parse_qsl(query.decode("latin-1")) if "\x00" in k + v]
        msg = "the NUL character (\\u0000) is not accepted in text"
        loc = ("query", *names[:1])
        raise RequestValidationError([{"type": "nul", "loc": loc, "msg": msg}])


async def refuse_nul(request: Request) -> None:
    """Refuse NUL characters in the query string, and NULs or repeated keys in a JSON
    body (422 naming the field)."""
    _refuse_nul_query(request)
    if request.method in ("POST", "PUT", "PATCH"):
        error = _body_error(await request.body())
        if error is not None:
            raise error


async def read_body(request: Request) -> bytes:
    """The whole body, read from the ASGI channel as Request.body() would, without the
    async generator that costs a DirectRoute more than the read itself."""
    chunks: list[bytes] = []
    while True:
        message = await request.receive()
        if message["type"] == "http.request":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)
        elif message["type"] == "http.disconnect":
            raise ClientDisconnect()


def json_bytes(content: dict[str, Any]) -> bytes:
    """A response model's fields as JSON, byte for byte as pydantic writes them when they
    hold JSON-native values, enums' values and UTC datetimes ("Z")."""
    return orjson.dumps(content, option=orjson.OPT_UTC_Z)


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
    """The body validated into `adapter`'s type, NUL escapes refused (422), for a
    DirectRoute: the body is read here, once."""
    _refuse_nul_query(request)
    raw = await read_body(request)
    error = _body_error(raw)
    if error is not None:
        raise error
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
