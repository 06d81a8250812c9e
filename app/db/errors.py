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


def is_store_outage(exc: BaseException) -> bool:
    if isinstance(exc, _OUTAGE):
        return True
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    # asyncpg raises its own connection errors, not always wrapped by SQLAlchemy.
    module = type(exc).__module__
    return module.startswith("asyncpg") and "Connection" in type(exc).__name__
