"""What the sync and async clients share: a call's description, the retry rule, the
headers and the next page's call."""

from __future__ import annotations

import dataclasses
import email.utils
import os
import random
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from importlib import metadata
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

DEFAULT_URL = "http://127.0.0.1:8080"


def default_url() -> str:
    return os.environ.get("ENGRAM_URL") or DEFAULT_URL


def default_key() -> str | None:
    return os.environ.get("ENGRAM_KEY") or None


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One API call, built once and sent as many times as the retry rule allows."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: dict[str, Any] | None = None
    json: Any = None
    # The server honours this header here: every attempt of the call sends the same key,
    # so a retry after a lost answer returns the first result instead of writing again.
    idempotency_key: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    # A POST that only reads (a search): sending it twice changes nothing.
    reads_only: bool = False

    @property
    def replayable(self) -> bool:
        """Safe to send again after a request that may have reached the server."""
        return self.method == "GET" or self.reads_only or self.idempotency_key is not None

    def request_headers(self) -> dict[str, str]:
        if self.idempotency_key is None:
            return self.headers
        return {**self.headers, "Idempotency-Key": self.idempotency_key}

    def with_params(self, **params: Any) -> Call[T]:
        return dataclasses.replace(self, params={**(self.params or {}), **params})


def keyed(key: str | None) -> str:
    """The call's Idempotency-Key: the caller's, or a new one for this call's attempts."""
    return key if key is not None else f"engram-client-{uuid.uuid4()}"


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retries of a call on a connection error, a 429 or a 503: exponential backoff with
    full jitter (at most `max_backoff_s`), or the server's Retry-After (given up past
    `max_retry_after_s`)."""

    attempts: int = 4
    backoff_s: float = 0.2
    max_backoff_s: float = 5.0
    max_retry_after_s: float = 30.0

    def delay(
        self,
        attempt: int,
        call: Call[Any],
        *,
        response: httpx.Response | None = None,
        error: Exception | None = None,
    ) -> float | None:
        """Seconds to wait before attempt `attempt + 1`, or None: give up now."""
        if attempt + 1 >= self.attempts:
            return None
        if error is not None:
            # A request that never left may always go again; one that may have reached the
            # server only when a repeat cannot write twice.
            if not (
                isinstance(error, httpx.ConnectError | httpx.ConnectTimeout) or call.replayable
            ):
                return None
        elif response is None or response.status_code not in (429, 503):
            return None
        backoff = random.uniform(0, min(self.max_backoff_s, self.backoff_s * 2**attempt))
        wait = retry_after(response) if response is not None else None
        if wait is None:
            return backoff
        if wait > self.max_retry_after_s:
            return None  # sooner would be refused again; the caller hears it now
        return wait + backoff / 10


def retry_after(response: httpx.Response) -> float | None:
    """The Retry-After header in seconds (a number or an HTTP date), if any."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def client_headers(key: str | None) -> dict[str, str]:
    try:
        version = metadata.version("engram")
    except metadata.PackageNotFoundError:
        version = "unknown"
    headers = {"User-Agent": f"engram-client/{version}", "Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def query(**params: Any) -> dict[str, Any]:
    """Query parameters without the ones left out, in the forms the API reads."""
    out: dict[str, Any] = {}
    for name, value in params.items():
        if value is None:
            continue
        if isinstance(value, list | tuple):
            out[name] = [_scalar(v) for v in value]
        else:
            out[name] = _scalar(value)
    return out


def _scalar(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def body(cls: type[M], given: M | Mapping[str, Any] | None, fields: Mapping[str, Any]) -> M:
    """A request model from a model, a mapping, keyword fields, or a mix (fields win)."""
    if isinstance(given, cls) and not fields:
        return given
    data = given.model_dump(exclude_unset=True) if isinstance(given, BaseModel) else given
    return cls.model_validate({**(data or {}), **fields})


def as_json(model: BaseModel) -> Any:
    return model.model_dump(mode="json", exclude_none=True)


def parser(cls: type[M]) -> Callable[[httpx.Response], M]:
    return lambda response: cls.model_validate_json(response.content)


def json_body(response: httpx.Response) -> dict[str, Any]:
    value = response.json()
    return value if isinstance(value, dict) else {"value": value}


def nothing(response: httpx.Response) -> None:
    return None


def next_call(call: Call[T], response: httpx.Response, page: Any) -> Call[T] | None:
    """The call of the next page: the `Link: rel=next` target, else the page's
    `next_cursor` or `next_offset`; None after the last page."""
    link = response.links.get("next", {}).get("url")
    if link:
        target = httpx.URL(link)
        path = target.raw_path.decode("ascii")
        return dataclasses.replace(call, path=path, params=None)
    cursor = getattr(page, "next_cursor", None)
    if cursor:
        return call.with_params(cursor=cursor)
    offset = getattr(page, "next_offset", None)
    if offset:
        return call.with_params(offset=offset)
    return None
