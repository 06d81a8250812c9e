"""`engram serve`, `engram migrate` and `engram worker`: the processes a deployment runs."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from typing import Annotated

import typer

from app.cli.database import open_database
from app.core.config import Settings, get_settings
from app.core.logging import configure_logging


async def _preflight(settings: Settings) -> None:
    """Check the stores, migrate (when configured) and apply the protected-mode check
    before binding."""
    from app.core.errors import StartupRefused
    from app.db.engine import Transactions
    from app.db.migrate import migrate as run_migrate
    from app.services.access.auth import Authenticator
    from app.storage import misplaced_payloads, open_blob_store

    # One process per payload store: a second `engram serve` on the same directory stops
    # here (StoreInUse) instead of failing inside the server's start-up.
    blobs = open_blob_store(settings)
    try:
        engine = await open_database(settings)
        try:
            if settings.migrate_on_start:
                await run_migrate(engine)
            transactions = Transactions(engine)
            async with transactions.read() as session:
                why = await misplaced_payloads(settings, blobs, session)
            if why is not None:
                raise StartupRefused(why)
            await Authenticator(settings, transactions).startup(warn=False)
        finally:
            await engine.dispose()
    finally:
        blobs.close()


def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (ENGRAM_HOST)")] = None,
    port: Annotated[int | None, typer.Option(help="Port (ENGRAM_PORT)")] = None,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            help="API processes sharing the port (PostgreSQL, with ENGRAM_BLOB_STORE=sql)",
        ),
    ] = 1,
) -> None:
    """Apply migrations and serve the HTTP API."""
    import uvicorn

    from app.api.connection import protocol_with
    from app.cli.replicas import refusal, serve_replicas
    from app.main import create_app

    settings = get_settings()
    if host is not None:
        settings.host = host
    if port is not None:
        settings.port = port
    configure_logging(settings.log_level)
    if workers > 1 and (why := asyncio.run(refusal(settings))) is not None:
        typer.echo(f"engram: --workers {workers}: {why}", err=True)
        raise typer.Exit(2)
    # The port first: taken, it is the one line to read, before any migration runs.
    sock = _bind(settings.host, settings.port)
    # The lifespan checks this too; checking first gives a clean message and exit code.
    asyncio.run(_preflight(settings))
    if workers > 1:
        sock.close()  # the replicas bind it themselves, sharing it
        serve_replicas(settings, workers)
        return
    # The preflight has migrated (when asked to): the lifespan need not do it again.
    app = create_app(settings.model_copy(update={"migrate_on_start": False}))
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        proxy_headers=False,
        timeout_keep_alive=30,
        http=protocol_with(settings.limits.header_timeout_s),
    )
    server = uvicorn.Server(config)
    server.run(sockets=[sock])
    if not server.started:
        raise typer.Exit(3)


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket's address taken now (uvicorn listens on it); a port in use
    stops `engram serve` with one line naming the setting."""
    from app.core.errors import StartupRefused

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise StartupRefused(
            f"ENGRAM_PORT (--port): {host}:{port} cannot be bound ({exc.strerror or exc}): "
            "another process listens there (another `engram serve`?); stop it or pick "
            "another port"
        ) from None
    sock.set_inheritable(True)
    return sock


def migrate(
    wait: Annotated[
        float, typer.Option(help="Seconds to wait for the database to accept connections")
    ] = 0,
) -> None:
    """Apply database migrations."""
    from app.db.errors import DatabaseUnreachable
    from app.db.migrate import migrate as run_migrate

    settings = get_settings()

    async def _run() -> None:
        deadline = time.monotonic() + wait
        waiting = False
        while True:
            try:
                engine = await open_database(settings)
                break
            except DatabaseUnreachable as exc:
                # Only an unreachable database is waited for: a wrong URL fails at once.
                if time.monotonic() >= deadline:
                    raise
                if not waiting:
                    typer.echo(
                        f"engram: waiting up to {wait:g} s for the database: {exc}", err=True
                    )
                    waiting = True
                await asyncio.sleep(min(1.0, max(deadline - time.monotonic(), 0.05)))
        try:
            await run_migrate(engine)
        finally:
            await engine.dispose()

    asyncio.run(_run())
    typer.echo("migrations applied")


def worker(
    once: Annotated[bool, typer.Option("--once", help="Run every due job, then exit")] = False,
) -> None:
    """Run the background worker as its own process, without HTTP: as many as wanted on
    one database (set ENGRAM_LEARNING__WORKER=false on the API for API-only replicas).
    SIGTERM or SIGINT stops it; the jobs it claimed and did not finish go back to the
    queue."""
    import signal

    from app.db.backends import backend_of
    from app.db.engine import Transactions
    from app.db.migrate import migrate as run_migrate
    from app.embeddings import start_embedder
    from app.worker.embeddings import Backlog
    from app.worker.runner import Worker

    settings = get_settings()
    configure_logging(settings.log_level)

    async def _run() -> int:
        engine = await open_database(settings)
        try:
            if settings.migrate_on_start:
                await run_migrate(engine)
            transactions = Transactions(engine, one_writer=backend_of(engine).one_writer)
            runner = Worker(transactions, settings.learning)
            # The embedding backlog is the worker's too (the API embeds only queries then).
            embedder = await start_embedder(settings.embeddings)
            backlog = (
                Backlog(
                    embedder, transactions, settings=settings.embeddings, learning=settings.learning
                )
                if embedder is not None
                else None
            )
            try:
                if once:
                    done = await runner.drain()
                    if backlog is not None:
                        await backlog.drain()
                    return done
                loops = [runner.run(resume=True)] + ([backlog.run()] if backlog else [])
                task = asyncio.ensure_future(asyncio.gather(*loops))
                loop = asyncio.get_running_loop()
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, task.cancel)
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                return 0
            finally:
                if embedder is not None:
                    await embedder.close()
        finally:
            await engine.dispose()

    done = asyncio.run(_run())
    if once:
        typer.echo(f"{done} jobs run")
