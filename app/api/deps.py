"""Annotated dependencies: settings, sessions, stores, the caller's principal."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Header, Request
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.core.config import Settings
from app.services.auth import Authenticator, Principal, Role
from app.services.episode_writer import EpisodeWriter
from app.services.episodes import EpisodeService
from app.storage.blobs import BlobStore


@dataclass
class AppState:
    """Everything the lifespan creates; handed out through the dependencies below."""

    settings: Settings
    engine: AsyncEngine
    read_sessions: async_sessionmaker[AsyncSession]
    write_sessions: async_sessionmaker[AsyncSession]
    blobs: BlobStore
    writer: EpisodeWriter
    auth: Authenticator


def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.engram
    return state


StateDep = Annotated[AppState, Depends(get_state)]


def get_settings_dep(state: StateDep) -> Settings:
    return state.settings


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]


async def get_session(state: StateDep) -> AsyncIterator[AsyncSession]:
    # scope="function" below: the commit happens before the response is sent, so
    # an acknowledged write is a committed one and a failed commit is an error reply.
    async with state.read_sessions() as session:
        try:
            yield session
            await session.commit()
        except BaseException:
            await session.rollback()
            raise


SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]


def get_blobs(state: StateDep) -> BlobStore:
    return state.blobs


BlobsDep = Annotated[BlobStore, Depends(get_blobs)]


def _bearer(authorization: str | None, x_api_key: str | None) -> str | None:
    if authorization:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    return x_api_key or None


async def get_principal(
    state: StateDep,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
    x_api_key: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Principal:
    return await state.auth.authenticate(_bearer(authorization, x_api_key))


PrincipalDep = Annotated[Principal, Depends(get_principal)]


def _role(role: Role):  # type: ignore[no-untyped-def]
    def dependency(principal: PrincipalDep) -> Principal:
        principal.require(role)
        return principal

    return dependency


ReaderDep = Annotated[Principal, Depends(_role(Role.READER))]
AgentDep = Annotated[Principal, Depends(_role(Role.AGENT))]
AdminDep = Annotated[Principal, Depends(_role(Role.ADMIN))]


def get_episode_service(state: StateDep, session: SessionDep) -> EpisodeService:
    return EpisodeService(
        session, blobs=state.blobs, writer=state.writer, limits=state.settings.limits
    )


EpisodeServiceDep = Annotated[EpisodeService, Depends(get_episode_service)]
