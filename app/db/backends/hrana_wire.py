"""The HTTP side of libSQL's protocol (Hrana 3 over HTTP) for `hrana`: one server's
shared HTTP connections, its requests and their round trips, values and errors as the
protocol writes them."""

from __future__ import annotations

import base64
import queue
import sqlite3
import threading
from collections.abc import Iterator
from datetime import date, datetime
from typing import Any

import httpx
import orjson
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

_TIMEOUT = httpx.Timeout(60.0, connect=5.0)


class Client:
    """One server's HTTP connections, shared by the process's database connections (each
    runs in its own thread; httpx's pool is thread-safe)."""

    _shared: dict[tuple[str, str], Client] = {}
    _lock = threading.Lock()

    def __init__(self, url: str, auth_token: str) -> None:
        headers = {"content-type": "application/json"}
        if auth_token:
            headers["authorization"] = f"Bearer {auth_token}"
        self.url = url.rstrip("/")
        self.http = httpx.Client(headers=headers, timeout=_TIMEOUT)
        self.round_trips = 0  # requests a caller waited for
        self.closed_later = 0  # streams closed off the callers' path
        self._closing: queue.SimpleQueue[tuple[str | None, str]] = queue.SimpleQueue()
        self._closer: threading.Thread | None = None

    @classmethod
    def of(cls, url: str, auth_token: str) -> Client:
        with cls._lock:
            found = cls._shared.get((url, auth_token))
            if found is None or found.http.is_closed:
                found = cls._shared[(url, auth_token)] = cls(url, auth_token)
            return found

    def pipeline(self, base: str | None, body: dict[str, Any]) -> dict[str, Any]:
        """One request: the stream's requests in, their results out."""
        return orjson.loads(self._post(base, "pipeline", body))  # type: ignore[no-any-return]

    def cursor(self, base: str | None, body: dict[str, Any]) -> list[dict[str, Any]]:
        """One batch whose rows come streamed, one JSON line each, with no limit on their
        size (a pipeline's answer has one): the stream's state first, then the entries."""
        return [orjson.loads(line) for line in self._post(base, "cursor", body).splitlines()]

    def close_later(self, base: str | None, baton: str) -> None:
        """Close a stream that only read, off the caller's path: closing it ends its read
        transaction, and nothing waits for that."""
        with self._lock:
            if self._closer is None:
                self._closer = threading.Thread(target=self._close_streams, daemon=True)
                self._closer.start()
        self._closing.put((base, baton))

    def _close_streams(self) -> None:
        while True:
            base, baton = self._closing.get()
            try:
                closing = {"baton": baton, "requests": [{"type": "close"}]}
                self._post(base, "pipeline", closing, waited=False)
                self.closed_later += 1
            except sqlite3.Error:
                pass  # the server drops a stream nobody uses after a while anyway

    def _post(
        self, base: str | None, path: str, body: dict[str, Any], *, waited: bool = True
    ) -> bytes:
        self.round_trips += waited
        try:
            response = self.http.post(f"{base or self.url}/v3/{path}", content=orjson.dumps(body))
        except httpx.HTTPError as exc:
            raise sqlite3.OperationalError(f"libSQL server unreachable: {exc!r}") from exc
        if response.status_code in (401, 403):
            raise sqlite3.OperationalError(
                "the libSQL server refused the credentials (ENGRAM_DATABASE_AUTH_TOKEN): "
                + response.text[:200]
            )
        if response.status_code == 400 and "baton" in response.text:
            # The server no longer knows the stream (it expired or the server restarted):
            # its transaction is gone.
            raise sqlite3.OperationalError(f"libSQL stream lost: {response.text[:200]}")
        if response.status_code != 200:
            raise sqlite3.OperationalError(
                f"libSQL server answered {response.status_code}: {response.text[:200]}"
            )
        return response.content

    def close(self) -> None:
        self.http.close()


class RoundTrips(Collector):
    """The process's requests to libSQL servers that a statement waited for."""

    def collect(self) -> Iterator[CounterMetricFamily]:
        found = CounterMetricFamily(
            "engram_db_round_trips",
            "Requests to the libSQL server that a statement waited for (one network round "
            "trip each)",
        )
        found.add_metric([], sum(c.round_trips for c in list(Client._shared.values())))
        yield found


def value(value: Any) -> dict[str, Any]:
    """A parameter as Hrana sends it; dates as text the way sqlite3's adapters write them."""
    if value is None:
        return {"type": "null"}
    if isinstance(value, bool | int):
        return {"type": "integer", "value": str(int(value))}
    if isinstance(value, float):
        return {"type": "float", "value": value}
    if isinstance(value, str):
        return {"type": "text", "value": value}
    if isinstance(value, bytes | bytearray | memoryview):
        return {"type": "blob", "base64": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, datetime):
        return {"type": "text", "value": value.isoformat(" ")}
    if isinstance(value, date):
        return {"type": "text", "value": value.isoformat()}
    raise sqlite3.ProgrammingError(f"unsupported parameter type {type(value).__name__}")


def python(value: dict[str, Any]) -> Any:
    kind = value["type"]
    if kind == "integer":
        return int(value["value"])
    if kind == "text" or kind == "float":
        return value["value"]
    if kind == "blob":
        data = value["base64"]
        return base64.b64decode(data + "=" * (-len(data) % 4))
    return None


def stmt(operation: str, parameters: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"sql": operation}
    if parameters:
        found["args"] = [value(v) for v in parameters]
    return found


def error(error: dict[str, Any]) -> sqlite3.Error:
    """The sqlite3 exception that says what the server's error says."""
    code = str(error.get("code") or "")
    said = str(error.get("message") or code)
    if code.startswith("SQLITE_CONSTRAINT") or "constraint failed" in said:
        found: sqlite3.Error = sqlite3.IntegrityError(said)
    else:
        found = sqlite3.OperationalError(said)
    if code:
        found.sqlite_errorname = code
    return found
