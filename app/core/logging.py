"""Structured logs: one JSON object per line on stderr."""

from __future__ import annotations

import logging
import re
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

import orjson

request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)
# Set by the episode writer while it serves a batch: the ids of the batch's requests.
batch_request_ids_var: ContextVar[list[str] | None] = ContextVar("request_ids", default=None)
# API keys' shape: should one reach a message or a traceback, it is masked before writing.
_API_KEY = re.compile(r"egk_[A-Za-z0-9_\-]{4,}")

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "color_message",
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rid = request_id_var.get()
        if rid is not None:
            doc["request_id"] = rid
        ids = batch_request_ids_var.get()
        if ids:
            doc["request_ids"] = ids
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                doc[key] = value
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        line = orjson.dumps(doc, default=str).decode()
        return _API_KEY.sub("egk_[redacted]", line) if "egk_" in line else line


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Our request log replaces uvicorn's access log; its other logs go through the same formatter.
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").disabled = True
    # httpx logs every request at INFO: the libSQL client's statements, the embedders' calls.
    logging.getLogger("httpx").setLevel(logging.WARNING)
