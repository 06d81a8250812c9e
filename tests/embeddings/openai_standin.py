"""A small server speaking OpenAI's /v1/embeddings on 127.0.0.1, run by uvicorn in a thread.

Its vectors come from a hash of each text (not normalised, rows listed in reverse with
their `index`), and a test can tell it to fail, hang or answer wrongly on the next calls."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.server import free_port

DEFAULT_DIM = 8


def standin_vector(text: str, dim: int = DEFAULT_DIM) -> np.ndarray:
    """The stand-in's vector for `text`, normalised (as an embedder should return it)."""
    row = _raw(text, dim)
    return row / np.linalg.norm(row)


def _raw(text: str, dim: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    # Scaled by 3: the rows arrive unnormalised, as Ollama's do.
    return np.random.default_rng(seed).normal(size=dim) * 3


@dataclass
class Seen:
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class StandIn:
    """What the next calls do: each entry of `script` is taken by one call, in order.

    Entries: an HTTP status to fail with ("429", "500", "401", ...), "hang" (no answer
    until the server stops), "short" (one embedding too few), "wide" (one number too
    many), "text" (strings for numbers), "redirect" (307 elsewhere)."""

    api_key: str | None = None
    retry_after: str | None = None
    script: deque[str] = field(default_factory=deque)
    seen: list[Seen] = field(default_factory=list)
    port: int = 0
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def then(self, *steps: str) -> StandIn:
        self.script.extend(steps)
        return self

    async def embeddings(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.seen.append(Seen(headers=dict(request.headers), body=body))
        if self.api_key is not None and request.headers.get("authorization") != (
            f"Bearer {self.api_key}"
        ):
            error = {"message": "Incorrect API key provided", "type": "invalid_request_error"}
            return JSONResponse({"error": error}, status_code=401)
        step = self.script.popleft() if self.script else "ok"
        if step == "hang":
            await self._stopping.wait()
        if step == "redirect":
            return JSONResponse({}, status_code=307, headers={"Location": "/v2/embeddings"})
        if step.isdigit():
            headers = {"Retry-After": self.retry_after} if self.retry_after else {}
            error = {"message": f"stand-in told to fail with {step}", "type": "server_error"}
            return JSONResponse({"error": error}, status_code=int(step), headers=headers)
        dim = body.get("dimensions") or DEFAULT_DIM
        texts = body["input"]
        rows: list[Any] = [_raw(text, dim).tolist() for text in texts]
        if step == "wide":
            rows = [row + [0.5] for row in rows]
        if step == "text":
            rows = [[str(x) for x in row] for row in rows]
        data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)]
        if step == "short":
            data = data[:-1]
        data.reverse()
        return JSONResponse({"object": "list", "data": data, "model": body.get("model")})

    def _app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/embeddings", self.embeddings, methods=["POST"])])

    def serve(self) -> _Running:
        return _Running(self)


class _Running:
    """The stand-in's uvicorn in a thread, started on enter and stopped on exit."""

    def __init__(self, standin: StandIn) -> None:
        self.standin = standin
        standin.port = free_port()
        config = uvicorn.Config(
            standin._app(),
            host="127.0.0.1",
            port=standin.port,
            log_level="warning",
            lifespan="off",
            http="h11",
            ws="none",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self.loop = asyncio.get_running_loop()
            await self.server.serve()

        asyncio.run(main())

    def __enter__(self) -> StandIn:
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the embeddings stand-in did not start")
            time.sleep(0.01)
        return self.standin

    def __exit__(self, *exc: object) -> None:
        # Calls told to hang are let go, so the server can stop.
        self.loop.call_soon_threadsafe(self.standin._stopping.set)
        self.server.should_exit = True
        self.thread.join(timeout=30)
