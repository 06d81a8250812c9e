"""What every tool shares: the caller of the HTTP request that carried the call, its role
check, the service's errors as tool errors, and tools whose arguments are a request schema."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import orjson
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from starlette.requests import Request

from app.api.body import json_bytes
from app.api.deps import AppState, check_role
from app.core.errors import AppError, Forbidden
from app.services.access.auth import Principal, Role
from app.services.access.idempotency import checked_key

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
Ctx = Context[Any, Any]
# Where the /mcp endpoint leaves the authenticated caller, in the request's scope state.
PRINCIPAL = "engram_principal"


@dataclass(frozen=True, slots=True)
class Caller:
    """The app's state and the principal of the HTTP request that carried the call."""

    state: AppState
    principal: Principal
    # The Idempotency-Key the HTTP request carried: a write tool retried under it writes once.
    idempotency_key: str | None = None

    @property
    def namespace(self) -> str:
        return self.principal.namespace


def _request(ctx: Ctx) -> Request:
    request = ctx.request_context.request
    if not isinstance(request, Request):
        raise ToolError("this tool is served over HTTP only")
    return request


async def caller(ctx: Ctx, role: Role, *, tool: str) -> Caller:
    """The caller, if its key has `role`; a denial is audited as over HTTP, then refused."""
    request = _request(ctx)
    state: AppState = request.app.state.engram
    principal: Principal = request.scope["state"][PRINCIPAL]
    try:
        await check_role(request, principal, role, target=f"mcp tool {tool}")
    except Forbidden as exc:
        raise ToolError(f"Forbidden: {exc.message}") from exc
    try:
        key = checked_key(request.headers.get("idempotency-key"))
    except AppError as exc:
        raise ToolError(describe(exc)) from exc
    return Caller(state, principal, key)


def describe(exc: AppError) -> str:
    """An error as the HTTP API would answer it, in one line a model can act on."""
    body = exc.body()
    text = f"{body['error']} ({exc.status_code}): {body['detail']}"
    errors = body.get("errors") or []
    if len(errors) > 1:
        text += "; " + "; ".join(f"{e['field']}: {e['message']}" for e in errors[1:])
    return text


def invalid(exc: ValidationError) -> str:
    """Pydantic's errors as `field: reason`, the shape of the HTTP API's 422."""
    parts = []
    for error in exc.errors():
        field = ""
        for part in error["loc"]:
            field += f"[{part}]" if isinstance(part, int) else f".{part}" if field else str(part)
        parts.append(f"{field or 'arguments'}: {error['msg']}")
    return "ValidationError (422): " + "; ".join(parts)


async def answer(call: Awaitable[T]) -> T:
    """The service's result; its errors (404, 409, 422...) become tool errors."""
    try:
        return await call
    except AppError as exc:
        raise ToolError(describe(exc)) from exc
    except ValidationError as exc:
        raise ToolError(invalid(exc)) from exc


def dumped(result: BaseModel) -> dict[str, Any]:
    """A response model's fields as JSON values."""
    return result.model_dump(mode="json")


def _result(payload: dict[str, Any]) -> CallToolResult:
    """The answer as compact JSON text (what a model reads; indenting only costs it tokens)
    and as structured content (what a program reads)."""
    # As the HTTP API writes it (a memory's row holds datetimes and enums).
    text = json_bytes(payload)
    return CallToolResult(
        content=[TextContent(type="text", text=text.decode())],
        structured_content=orjson.loads(text),
    )


class _Unparsed(FuncMetadata):
    """Hands the tool its arguments as sent: it validates them itself, so that a refusal
    names each field and its reason as the HTTP API's 422 does."""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        return {"sent": self.pre_parse_json(arguments_to_validate)}


def schema_tool(
    *,
    name: str,
    body: type[M],
    run: Callable[[Ctx, M, dict[str, Any]], Awaitable[Any]],
    description: str,
    extra: dict[str, Any] | None = None,
    read_only: bool = False,
) -> Tool:
    """The tool `name`, whose arguments are the fields of the request schema `body` (plus
    `extra`, handed to `run` apart), validated by it exactly as the HTTP route's body is."""
    extra = extra or {}
    # The schema's fields, validators and config, with what MCPServer needs of arguments.
    arguments: type[ArgModelBase] = create_model(
        f"{name}_arguments",
        __base__=(body, ArgModelBase),  # type: ignore[arg-type]
        **extra,
    )

    async def call(ctx: Ctx, sent: dict[str, Any]) -> Any:
        try:
            checked = arguments.model_validate(sent)
            data = body.model_validate({k: v for k, v in sent.items() if k not in extra})
        except ValidationError as exc:
            raise ToolError(invalid(exc)) from exc
        return _result(await answer(run(ctx, data, {key: getattr(checked, key) for key in extra})))

    return Tool(
        fn=call,
        name=name,
        description=description,
        parameters=arguments.model_json_schema(by_alias=True),
        fn_metadata=_Unparsed(arg_model=arguments),
        is_async=True,
        context_kwarg="ctx",
        annotations=ToolAnnotations(read_only_hint=read_only),
    )


def function_tool(fn: Callable[..., Awaitable[Any]], *, read_only: bool = False) -> Tool:
    """The tool of `fn` (its name, docstring and annotated parameters), whose refusals of
    arguments name each field as `schema_tool`'s do."""
    # The docstring as one paragraph: its line breaks are the source's, not the text's.
    plain = Tool.from_function(fn, description=" ".join((fn.__doc__ or "").split()))
    # Unknown arguments are refused, as the HTTP API refuses unknown fields: a misspelt
    # one would otherwise be dropped without a word.
    base = plain.fn_metadata.arg_model
    arguments = cast(
        "type[ArgModelBase]",
        type(base.__name__, (base,), {"model_config": ConfigDict(extra="forbid")}),
    )

    async def call(ctx: Ctx, sent: dict[str, Any]) -> Any:
        try:
            checked = arguments.model_validate(sent)
        except ValidationError as exc:
            raise ToolError(invalid(exc)) from exc
        return _result(await answer(fn(ctx, **checked.model_dump_one_level())))

    return plain.model_copy(
        update={
            "fn": call,
            "fn_metadata": _Unparsed(arg_model=arguments),
            "parameters": arguments.model_json_schema(by_alias=True),
            "context_kwarg": "ctx",
            "annotations": ToolAnnotations(read_only_hint=read_only),
        }
    )
