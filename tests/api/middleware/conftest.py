"""Logs as the service writes them, for the middleware tests."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi import FastAPI

from app.core.logging import JsonFormatter

Logs = Callable[[], list[dict[str, Any]]]


@pytest.fixture
def raw_logs() -> Iterator[io.StringIO]:
    """What the service writes to its log stream, formatted as in production."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    # The test's own HTTP client logs too; only the service's lines are under test.
    handler.addFilter(lambda record: not record.name.startswith(("httpx", "httpcore")))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield out
    root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture
def logs(raw_logs: io.StringIO) -> Logs:
    return lambda: [json.loads(line) for line in raw_logs.getvalue().splitlines()]


def access_lines(logs: Logs) -> list[dict[str, Any]]:
    return [line for line in logs() if line["logger"] == "engram.access"]


def add_broken_route(app: FastAPI, secret: str) -> None:
    async def broken() -> None:
        raise RuntimeError(f"a defect that mentions {secret}")

    app.add_api_route("/v1/broken", broken)
