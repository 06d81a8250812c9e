"""Annotated dependencies: settings, sessions, stores, the caller's principal.

All are `async def`: FastAPI would run a plain `def` dependency in a thread pool,
a thread hop on every request.
"""

from __future__ import annotations

import contextlib
import functools
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import JSONResponse
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.api.params import Limit
from app.core.config import Settings
from app.core.errors import Forbidden, InvalidInput
from app.db.backends.base import Maintenance
from app.db.engine import Transactions
from app.search import Retrieval
from app.services.access import audit
from app.services.access.auth import Authenticator, Principal, Role
from app.services.access.idempotency import KeptAnswer, KeyLocks, checked_key, digest
from app.services.agents.sessions import AgentSessions
from app.services.episodes.service import EpisodeService
from app.services.policies.deciders import Deciders
from app.services.recall.requests import RecallRequests
from app.services.writer import Writer
from app.storage.blobs import BlobStore
from app.worker.embeddings import Backlog
from app.worker.runner import Worker


@dataclass
class AppState:
    """Everything the lifespan creates; handed out through the dependencies below."""

    settings: Settings
    engine: AsyncEngine
    # Every transaction of a request is opened here, by the dependencies below.
    transactions: Transactions
    blobs: BlobStore
    writer: Writer
    auth: Authenticator
    episodes: EpisodeService
    recall_rng: random.Random
    # Ranked search of memories (its index, if any, is this process's).
    search: Retrieval
    # The in-process background worker (None when `engram worker` runs it elsewhere).
    worker: Worker | None = None
    # Embeds new memories in the background (where the worker runs, with an embedder).
    backlog: Backlog | None = None
    # SQLite (a file): the thread that checkpoints the write-ahead log.
    checkpointer: Maintenance | None = None
    # Requests under one Idempotency-Key, one at a time.
    key_locks: KeyLocks = field(default_factory=KeyLocks)
    # Which policy decides each namespace's recalls (cached a second).
    deciders: Deciders = field(default_factory=Deciders)

    @functools.cached_property
    def recalls(self) -> RecallRequests:
        """The recall use case over this process's stores (the API, MCP and hooks share it)."""
        return RecallRequests(
            self.transactions,
            writer=self.writer,
            search=self.search,
            settings=self.settings.recall,
            rng=self.recall_rng,
            key_locks=self.key_locks,
            deciders=self.deciders,
        )

    @functools.cached_property
    def agents(self) -> AgentSessions:
        """Coding agents' sessions (hooks and imports) over this process's stores."""
        return AgentSessions(
            self.transactions,
            episodes=self.episodes,
            recalls=self.recalls,
            settings=self.settings.agents,
            rules=self.episodes.rules,
            learning=self.settings.learning,
        )


async def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.engram
    return state


StateDep = Annotated[AppState, Depends(get_state)]


async def get_settings_dep(state: StateDep) -> Settings:
    return state.settings


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]


def page_size(limit: int | None, settings: Settings) -> int:
    """The page size asked for (at most max_page_size, else 422) or the default."""
    limits = settings.limits
    if limit is not None and limit > limits.max_page_size:
        raise InvalidInput(f"limit: at most {limits.max_page_size}", field="limit")
    return limit or limits.default_page_size


async def get_page_size(settings: SettingsDep, limit: Limit = None) -> int:
    return page_size(limit, settings)


# A listing's page size, from its `limit` query parameter (MCP calls page_size itself).
PageSize = Annotated[int, Depends(get_page_size)]


# A request's transactions: the session dependencies (scope="function": the commit
# happens before the response is sent, so an acknowledged write is a committed one and a
# failed commit is an error reply), and read_session()/write_session() for a route that
# needs several in one request (the fast routes, work done in steps). Services never
# commit.


async def get_session(state: StateDep) -> AsyncIterator[AsyncSession]:
    """For reads (SQLite: a deferred transaction that never blocks on writers)."""
    async with state.transactions.read() as session:
        yield session


def read_session(state: AppState) -> contextlib.AbstractAsyncContextManager[AsyncSession]:
    """A read transaction of its own, ended when the block ends."""
    return state.transactions.read()


def write_session(state: AppState) -> contextlib.AbstractAsyncContextManager[AsyncSession]:
    """A write transaction of its own, committed on success."""
    return state.transactions.write()


async def get_write_session(state: StateDep) -> AsyncIterator[AsyncSession]:
    """For writes (SQLite: BEGIN IMMEDIATE, so the write lock is taken up front; see
    Transactions)."""
    async with state.transactions.write() as session:
        yield session


SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]
WriteSessionDep = Annotated[AsyncSession, Depends(get_write_session, scope="function")]


def client_address(request: Request) -> str:
    # From the scope: request.client builds an Address tuple on every access, and auth
    # asks on every request.
    client = request.scope.get("client")
    return client[0] if client else ""


def _bearer(authorization: str | None, x_api_key: str | None) -> str | None:
    if authorization:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    return x_api_key or None


async def get_principal(request: Request) -> Principal:
    # Headers are read here, in one pass over the raw list, rather than declared as
    # Header() parameters: this runs on every request, and FastAPI's parameter machinery
    # (or two lookups through starlette's Headers) costs more than the scan.
    authorization = x_api_key = None
    for name, value in request.scope["headers"]:
        if name == b"authorization" and authorization is None:
            authorization = value.decode("latin-1")
        elif name == b"x-api-key" and x_api_key is None:
            x_api_key = value.decode("latin-1")
    token = _bearer(authorization, x_api_key)
    state: AppState = request.app.state.engram
    return await state.auth.authenticate(token, client=client_address(request))


async def require_reader(request: Request) -> Principal:
    return await get_principal(request)


async def check_role(request: Request, principal: Principal, role: Role, *, target: str) -> None:
    """Refuse (Forbidden) a principal without `role`, over HTTP or MCP alike."""
    try:
        principal.require(role)
    except Forbidden as exc:
        # Denials go to the audit log in a transaction of their own: the request
        # fails, its record of the attempt stays.
        state: AppState = request.app.state.engram
        async with write_session(state) as session:
            await audit.record(
                session,
                action="request.denied",
                namespace=principal.namespace,
                actor=principal,
                target=target[:256],
                outcome="denied",
                client=client_address(request),
                reason=exc.message,
            )
        raise


async def _require(request: Request, role: Role) -> Principal:
    principal = await get_principal(request)
    await check_role(request, principal, role, target=f"{request.method} {request.url.path}")
    return principal


async def require_agent(request: Request) -> Principal:
    return await _require(request, Role.AGENT)


async def require_admin(request: Request) -> Principal:
    return await _require(request, Role.ADMIN)


async def require_operator(request: Request) -> Principal:
    return await _require(request, Role.OPERATOR)


ReaderDep = Annotated[Principal, Depends(require_reader)]
AgentDep = Annotated[Principal, Depends(require_agent)]
AdminDep = Annotated[Principal, Depends(require_admin)]
OperatorDep = Annotated[Principal, Depends(require_operator)]


async def hold_idempotency_key(
    request: Request, principal: ReaderDep, state: StateDep
) -> AsyncIterator[str | None]:
    """The request's Idempotency-Key, held for the request: a retry that arrives while the
    first is answered waits for its commit (declared before the write session, so it is
    released after the commit). The route's own role dependency checks the caller: this
    one takes no session and no lock but the key's, so a denial's audit write can run."""
    key = checked_key(request.headers.get("idempotency-key"))
    if key is None:
        yield None
        return
    async with state.key_locks.hold(principal.namespace, key):
        yield key


HeldKeyDep = Annotated[str | None, Depends(hold_idempotency_key, scope="function")]


async def get_kept_answer(
    request: Request, key: HeldKeyDep, principal: ReaderDep
) -> KeptAnswer | None:
    if key is None:
        return None
    return KeptAnswer(
        namespace=principal.namespace,
        key=key,
        operation=f"{request.method} {request.url.path}"[:512],
        request_digest=digest(await request.body(), caller=principal.key_id),
    )


# For routes that create something in their write session: declared before the session,
# and given it in `replay` and `keep`.
KeptAnswerDep = Annotated[KeptAnswer | None, Depends(get_kept_answer)]


def replayed(kept: tuple[int, Any]) -> JSONResponse:
    """The first answer to a request made under an Idempotency-Key, for its retry."""
    status_code, body = kept
    return JSONResponse(body, status_code=status_code, headers={"Idempotent-Replayed": "true"})


async def get_episode_service(request: Request) -> EpisodeService:
    state: AppState = request.app.state.engram
    return state.episodes


EpisodeServiceDep = Annotated[EpisodeService, Depends(get_episode_service)]
