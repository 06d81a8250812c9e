"""Which database exceptions mean "the store is unavailable" (503) rather than a bug."""

from __future__ import annotations

import sqlalchemy.exc as sa_exc

_OUTAGE = (
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    sa_exc.TimeoutError,
    sa_exc.DisconnectionError,
    ConnectionError,
    TimeoutError,
    OSError,
)


# SQLSTATEs that mean "busy, try again" rather than a bug: lock_not_available (lock_timeout),
# query_canceled (statement_timeout), serialization_failure, deadlock_detected,
# too_many_connections, cannot_connect_now, admin_shutdown.
_BUSY_STATES = {"55P03", "57014", "40001", "40P01", "53300", "57P03", "57P01"}


def is_store_outage(exc: BaseException) -> bool:
    if isinstance(exc, _OUTAGE):
        return True
    orig = getattr(exc, "orig", None)
    if (
        getattr(orig, "sqlstate", None) in _BUSY_STATES
        or getattr(exc, "sqlstate", None) in _BUSY_STATES
    ):
        return True
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    # asyncpg raises its own connection errors, not always wrapped by SQLAlchemy.
    module = type(exc).__module__
    return module.startswith("asyncpg") and "Connection" in type(exc).__name__


def outage_reason(exc: BaseException) -> str:
    """What the driver said, for the operator: its first line, without SQL or parameters."""
    cause = getattr(exc, "orig", None) or exc
    lines = str(cause).strip().splitlines()
    message = lines[0] if lines else ""
    # asyncpg prefixes the exception class in angle brackets; SQLAlchemy appends SQL.
    message = message.split("\n[SQL:", 1)[0].rsplit(">: ", 1)[-1].strip()[:200]
    name = type(cause).__name__
    return f"{name}: {message}" if message else name


class DatabaseConfigError(RuntimeError):
    """ENGRAM_DATABASE_URL names a database Engram cannot use; the message says what to set."""


class DatabaseUnreachable(DatabaseConfigError):
    """The database did not accept a connection (not running, wrong host, name or user)."""
