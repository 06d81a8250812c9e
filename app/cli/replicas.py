"""`engram serve --workers N`: N API processes on one port, sharing one database.

uvicorn's supervisor binds the port once, starts the processes (spawned: each imports the
app afresh and reads the settings from the environment the command passes on), starts
again one that dies, and stops them all on SIGTERM or SIGINT. The command has migrated
and checked the keys before: the processes do neither. Each runs the API's own worker
unless ENGRAM_LEARNING__WORKER=false; what each keeps to itself is in docs/operations.md.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from app.api.connection import GuardedHttpProtocol
from app.core.config import Settings, get_settings
from app.core.logging import configure_logging

if TYPE_CHECKING:
    from fastapi import FastAPI


class ReplicaHttpProtocol(GuardedHttpProtocol):
    """The guarded protocol of a replica; its header deadline is set from the settings
    when the process builds its app (uvicorn hands the processes a protocol by name, so
    not a class made at run time), before it accepts a connection."""


async def refusal(settings: Settings) -> str | None:
    """Why several processes cannot serve these stores (None when they can)."""
    from app.db.backends import open_backend

    if settings.blob_store != "sql":
        return (
            "episode payloads in LevelDB admit one process (ENGRAM_BLOB_STORE=leveldb): set "
            "ENGRAM_BLOB_STORE=sql to keep them in the database"
        )
    backend = open_backend(settings)
    try:
        if backend.database_file is not None:
            return (
                f"the database is a SQLite file ({backend.database_file}), which one process "
                "serves: use PostgreSQL"
            )
    finally:
        await backend.dispose()
    if settings.database_replica is not None:
        return "an embedded replica (ENGRAM_DATABASE_REPLICA) is one process's file: unset it"
    return None


def create_replica_app() -> FastAPI:
    """The app of one replica, from the settings in its environment."""
    from app.main import create_app

    settings = get_settings()
    configure_logging(settings.log_level)
    ReplicaHttpProtocol.header_timeout_s = settings.limits.header_timeout_s
    return create_app(settings)


def serve_replicas(settings: Settings, workers: int) -> None:
    """Serve the API from `workers` processes until SIGTERM or SIGINT."""
    import uvicorn

    # The processes read the command's options as settings; migrations ran once, here.
    os.environ["ENGRAM_HOST"] = settings.host
    os.environ["ENGRAM_PORT"] = str(settings.port)
    os.environ["ENGRAM_MIGRATE_ON_START"] = "false"
    uvicorn.run(
        f"{__name__}:create_replica_app",
        factory=True,
        workers=workers,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        proxy_headers=False,
        timeout_keep_alive=30,
        http=f"{__name__}:ReplicaHttpProtocol",
    )
