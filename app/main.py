"""create_app() and the lifespan that owns the engines, the blob store and the writer."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import random
from collections.abc import AsyncIterator

from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from app.api.body import refuse_nul
from app.api.deps import AppState
from app.api.docs import install_docs
from app.api.errors import install_error_handlers
from app.api.metrics import JobDepth
from app.api.metrics import router as metrics_router
from app.api.middleware import (
    AccessLog,
    BodyLimits,
    Load,
    RequestContext,
    RequestGuard,
    SecurityHeaders,
)
from app.api.openapi import install_openapi
from app.api.routes import admin, backup, episodes, health, learning, memories, policies, recall, rl
from app.api.routes import agents as agent_routes
from app.api.routes import hooks as hook_routes
from app.core.config import Settings, get_settings
from app.core.metrics import Metrics
from app.core.tasks import cancel_and_wait
from app.db.backends import open_backend
from app.db.migrate import migrate
from app.embeddings import start_embedder
from app.learning.signatures import load_rules
from app.mcp import McpEndpoint
from app.search import open_search
from app.services.access.auth import Authenticator
from app.services.episodes.service import EpisodeService
from app.services.episodes.writes import EpisodeWrites
from app.services.memories.writes import MemoryWrites
from app.services.recall.logs import RecallLogs
from app.services.writer import Writer
from app.storage import BlobStore, open_blob_store
from app.ui import install_ui
from app.worker.embeddings import Backlog
from app.worker.runner import Worker

log = logging.getLogger("engram")


async def _sweep_loop(writer: Writer, interval_s: float) -> None:
    """Remove orphan payloads at start, then every interval."""
    while True:
        try:
            removed = await writer.sweep()
            log.info("orphan sweep finished", extra={"removed": removed})
        except Exception:
            log.exception("orphan sweep failed")
        if interval_s <= 0:
            return
        await asyncio.sleep(interval_s)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    load = Load()
    metrics = Metrics() if settings.metrics_enabled else None
    mcp = McpEndpoint(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        backend = open_backend(settings)
        engine = backend.engine
        blobs: BlobStore | None = None
        try:
            if settings.migrate_on_start:
                await migrate(engine)
            blobs = open_blob_store(settings)
            transactions = backend.transactions
            auth = Authenticator(settings, transactions)
            await auth.startup()
            # Before anything that must be stopped: an embedder asked for that cannot
            # start stops the process here.
            embedder = await start_embedder(settings.embeddings)
            worker = (
                Worker(
                    transactions,
                    settings.learning,
                    pressure=load.busy,
                    batch_size=settings.learning.api_batch_size,
                    metrics=metrics,
                )
                if settings.learning.worker
                else None
            )
            writer = Writer(
                engine,
                [
                    EpisodeWrites(
                        blobs,
                        max_steps=settings.limits.max_steps,
                        max_attempts=settings.learning.max_attempts,
                        on_completed=worker.wake if worker is not None else None,
                    ),
                    MemoryWrites(),
                    RecallLogs(metrics),
                ],
                blobs=blobs,
                max_batch=settings.ingest.max_batch,
                queue_size=settings.ingest.queue_size,
                lock=transactions.write_lock,
                metrics=metrics,
            )
            if metrics is not None:
                metrics.ingest_queue.set_function(lambda: writer.queue_depth)
            writer.start()
            search = open_search(backend, settings, embedder=embedder)
            search.start()
            backlog = (
                Backlog(
                    embedder,
                    transactions,
                    settings=settings.embeddings,
                    learning=settings.learning,
                    pressure=load.busy,
                    on_stored=(
                        functools.partial(search.vectors.refresh, verify=False)
                        if search.vectors
                        else None
                    ),
                )
                if embedder is not None and worker is not None
                else None
            )
            if metrics is not None:
                backend.observe(metrics)
            checkpointer = backend.checkpointer(metrics)
            if checkpointer is not None:
                checkpointer.start()
            app.state.engram = AppState(
                settings=settings,
                engine=engine,
                transactions=transactions,
                blobs=blobs,
                writer=writer,
                auth=auth,
                episodes=EpisodeService(
                    blobs=blobs,
                    writer=writer,
                    limits=settings.limits,
                    rules=load_rules(settings.agents.signature_rules),
                ),
                recall_rng=random.Random(settings.recall.seed),
                search=search,
                worker=worker,
                backlog=backlog,
                checkpointer=checkpointer,
            )
            sweeper = asyncio.create_task(_sweep_loop(writer, settings.sweep_interval_s))
            background = [sweeper]
            if worker is not None:
                background.append(asyncio.create_task(worker.run(resume=True)))
            if backlog is not None:
                background.append(asyncio.create_task(backlog.run()))
            # What exists now (modules, schemas, engines) lives for the whole process:
            # keep it out of the collector's full passes, which otherwise walk it
            # every few hundred requests and stall the event loop for tens of ms.
            gc.collect()
            gc.freeze()
            # Requests allocate many short-lived objects that reference counting frees;
            # a larger first generation runs the cycle collector less often for them.
            gc.set_threshold(20_000, 20, 20)
            log.info(
                "engram ready",
                extra={
                    "database": engine.url.render_as_string(hide_password=True),
                    "blob_store": settings.blob_store,
                    "blob_dir": str(settings.blob_dir),
                },
            )
            try:
                async with mcp.serving():
                    yield
            finally:
                for task in background:
                    await cancel_and_wait(task)
                await writer.stop()
                if checkpointer is not None:
                    await checkpointer.stop()
                await search.close()
                if embedder is not None:
                    await embedder.close()
        finally:
            if blobs is not None:
                blobs.close()
            await backend.dispose()

    app = FastAPI(
        title="Engram",
        version="0.1.0",
        summary="Self-learning episodic memory for AI agents",
        lifespan=lifespan,
        dependencies=[Depends(refuse_nul)],
        # Starlette's slash redirect builds its Location from the Host header.
        redirect_slashes=False,
        # FastAPI's pages load Swagger UI and ReDoc from a CDN: install_docs serves them.
        docs_url=None,
        redoc_url=None,
    )
    install_error_handlers(app)
    install_openapi(app)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "Idempotency-Key", "X-API-Key"],
            expose_headers=["Location", "Link", "X-Request-Id", "Idempotent-Replayed"],
        )
    # Each one added wraps those added before it: refusals and the 413, 408 and 500
    # answers carry the id and security headers, and are logged and counted.
    app.add_middleware(
        RequestGuard, allowed_hosts=settings.trusted_hosts, cors_origins=settings.cors_origins
    )
    app.add_middleware(
        BodyLimits,
        max_body_bytes=settings.limits.max_body_bytes,
        body_timeout_s=settings.limits.body_timeout_s,
    )
    app.add_middleware(AccessLog, log_requests=settings.log_requests, load=load, metrics=metrics)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(RequestContext)
    if settings.trusted_proxies:
        # Outermost: everything inside sees the client's address and scheme, as the
        # trusted proxy forwarded them (uvicorn's own middleware, given our list).
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.trusted_proxies)
    app.state.metrics = metrics
    # Routes are tried in order, and each one tried costs a match: the calls agents make
    # for every task first.
    app.include_router(health.router)
    app.include_router(recall.router)
    app.include_router(memories.router)
    app.include_router(episodes.router)
    app.include_router(hook_routes.router)
    app.include_router(agent_routes.router)
    app.include_router(rl.router)
    app.include_router(policies.router)
    app.include_router(learning.router)
    app.include_router(admin.router)
    app.include_router(backup.router)
    # The MCP server (streamable HTTP), behind the same middleware as the routes above.
    app.router.routes.append(mcp.route)
    install_docs(app)
    install_ui(app)
    if metrics is not None:
        # Last: every other request is routed without trying this path first.
        app.state.job_depth = JobDepth(metrics, ttl_s=settings.metrics_cache_s)
        app.include_router(metrics_router)
    return app
