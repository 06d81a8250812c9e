"""Database kinds: each a Backend (`base.py`) with its engine, sessions and the SQL it
writes its own way. `open_backend` picks one from ENGRAM_DATABASE_URL.

A new kind is one module here, one entry in `KINDS`, and its branches of the search
protocol in `app/search/`."""

from __future__ import annotations

from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

from app.core.config import Settings
from app.db.backends.base import Backend
from app.db.backends.libsql import SCHEMES as LIBSQL_SCHEMES
from app.db.backends.libsql import LibSQLBackend
from app.db.backends.postgres import PostgresBackend
from app.db.backends.sqlite import SQLiteBackend
from app.db.errors import DatabaseConfigError, DatabaseUnreachable, is_store_outage, outage_reason

# By name; each with the one async driver it is written for. libSQL speaks SQLite's
# dialect through its own driver.
KINDS: dict[str, type[Backend]] = {
    SQLiteBackend.name: SQLiteBackend,
    PostgresBackend.name: PostgresBackend,
    LibSQLBackend.name: LibSQLBackend,
}
_BY_DRIVER = {kind.driver: kind for kind in KINDS.values()}
_EXAMPLES = (
    "sqlite+aiosqlite:///./data/engram.db, postgresql+asyncpg://user:password@host/db "
    "or libsql://host:port"
)


def kind_for(settings: Settings) -> type[Backend]:
    """The backend ENGRAM_DATABASE_URL names; DatabaseConfigError, saying what to set, for
    a URL Engram cannot use."""
    try:
        url = make_url(settings.database_url)
    except ArgumentError:
        raise DatabaseConfigError(
            f"ENGRAM_DATABASE_URL is not a database URL; use {_EXAMPLES}"
        ) from None
    # From the URL's text: asking SQLAlchemy would load (or fail to find) the dialect.
    name, _, driver = url.drivername.partition("+")
    if name in LIBSQL_SCHEMES and not driver:
        return LibSQLBackend
    if "libsql" in (name, driver):
        fixed = f"libsql://{url.host or 'HOST'}{f':{url.port}' if url.port else ''}"
        raise DatabaseConfigError(f"ENGRAM_DATABASE_URL: name a libSQL server as {fixed}")
    kind = KINDS.get(name)
    if kind is None:
        raise DatabaseConfigError(
            f"ENGRAM_DATABASE_URL: {name!r} databases are not supported; use {_EXAMPLES}"
        )
    if driver != kind.driver:
        fixed = url.set(drivername=f"{name}+{kind.driver}").render_as_string(hide_password=True)
        raise DatabaseConfigError(
            f"ENGRAM_DATABASE_URL: Engram reaches {name} through {kind.driver}: use {fixed}"
        )
    return kind


def create_engine(settings: Settings) -> AsyncEngine:
    """The engine for ENGRAM_DATABASE_URL (DatabaseConfigError for one Engram cannot use)."""
    try:
        return kind_for(settings).create_engine(settings)
    except OSError as exc:  # SQLite: the file's directory cannot be created
        message = f"ENGRAM_DATABASE_URL: cannot create the database: {exc}"
        raise DatabaseConfigError(message) from exc


def open_backend(settings: Settings) -> Backend:
    """The backend of ENGRAM_DATABASE_URL with its engine (made in the lifespan)."""
    return kind_for(settings)(settings, create_engine(settings))


def backend_of(
    bind: AsyncSession | AsyncConnection | AsyncEngine | Connection | Engine,
) -> type[Backend]:
    """The kind of database a session, connection or engine talks to."""
    engine = bind.get_bind() if isinstance(bind, AsyncSession) else bind
    return _BY_DRIVER[engine.dialect.driver]


async def check_connection(engine: AsyncEngine) -> None:
    """Connect once; DatabaseUnreachable, saying what to check, if that fails."""
    try:
        async with engine.connect():
            pass
    except Exception as exc:
        if not (is_store_outage(exc) or isinstance(exc, DBAPIError)):
            raise
        where = engine.url.render_as_string(hide_password=True)
        check = (
            "check ENGRAM_DATABASE_URL (a file in a directory this user may write)"
            if backend_of(engine).name == SQLiteBackend.name
            else "check ENGRAM_DATABASE_URL and that the server is running and reachable"
        )
        raise DatabaseUnreachable(
            f"cannot connect to the database {where} ({outage_reason(exc)}): {check}"
        ) from exc


__all__ = [
    "Backend",
    "LibSQLBackend",
    "KINDS",
    "backend_of",
    "check_connection",
    "create_engine",
    "kind_for",
    "open_backend",
]
