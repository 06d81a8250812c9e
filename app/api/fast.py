"""The calls agents make for every task (POST /v1/recall, /v1/memories, /v1/episodes), as
DirectRoutes declared by one decorator: the caller authenticated, the body parsed once,
a service called, its answer written once. FastAPI's dependency solving and response
validation are skipped; OpenAPI documents them as any other route.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel

from app.api.body import DirectRoute, json_body, parse_body
from app.api.deps import AppState, require_admin, require_agent, require_operator, require_reader
from app.services.access.auth import Principal, Role
from app.services.access.idempotency import IDEMPOTENCY_HEADER

M = TypeVar("M", bound=BaseModel)

_REQUIRE: dict[Role, Callable[[Request], Awaitable[Principal]]] = {
    Role.READER: require_reader,
    Role.AGENT: require_agent,
    Role.ADMIN: require_admin,
    Role.OPERATOR: require_operator,
}


@dataclass(frozen=True, slots=True)
class Answer:
    """What a fast route answers: its JSON body (serialised once, by the route), where the
    resource it created lives, and whether it is a retried request's first answer."""

    body: bytes | str
    location: str | None = None
    replayed: bool = False


# The route's function: the app's state, the caller, the parsed body, the Idempotency-Key
# header as sent (None without one); each service checks the key itself.
FastCall: TypeAlias = Callable[[AppState, Principal, M, str | None], Awaitable[Answer]]


def fast_post(
    router: APIRouter,
    path: str,
    *,
    role: Role,
    body: type[M],
    response_model: type[BaseModel],
    summary: str,
    responses: dict[int | str, dict[str, Any]],
    status_code: int | None = None,
) -> Callable[[FastCall[M]], FastCall[M]]:
    """Declare the decorated function as POST `path` of `router`, for callers with `role`,
    taking `body` (documented under its class name) and an Idempotency-Key."""
    require = _REQUIRE[role]
    answer_status = status_code or 200

    def declare(call: FastCall[M]) -> FastCall[M]:
        async def endpoint(request: Request) -> Response:
            principal = await require(request)
            data = await parse_body(request, body)
            state: AppState = request.app.state.engram
            answer = await call(state, principal, data, request.headers.get("idempotency-key"))
            headers = {}
            if answer.location is not None:
                headers["Location"] = answer.location
            if answer.replayed:
                headers["Idempotent-Replayed"] = "true"
            return Response(
                answer.body,
                status_code=answer_status,
                media_type="application/json",
                headers=headers or None,
            )

        # The route's name (its OpenAPI operationId) and description are the function's.
        endpoint.__name__ = endpoint.__qualname__ = call.__name__
        endpoint.__doc__ = call.__doc__
        router.add_api_route(
            path,
            endpoint,
            methods=["POST"],
            route_class_override=DirectRoute,
            status_code=status_code,
            response_model=response_model,
            summary=summary,
            responses=responses,
            openapi_extra={
                **json_body(body.__name__, body),
                "parameters": [IDEMPOTENCY_HEADER],
            },
        )
        return call

    return declare
