"""The HTTP protocol `engram serve` runs: uvicorn's, with a deadline for request headers."""

from __future__ import annotations

import asyncio
from typing import Any

from app.core.versions import Supported

# GuardedHttpProtocol overrides private methods of uvicorn's httptools protocol and reads
# its `cycle`; checked before it is imported. Tested: 0.30.0 and 0.54.0.
UVICORN = Supported("uvicorn", at_least="0.30.0", below="0.55", user=__name__)
UVICORN.check()

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # noqa: E402


class GuardedHttpProtocol(HttpToolsProtocol):
    """Closes a connection that opens and sends nothing, or sends headers a byte at a time.

    uvicorn times out idle keep-alive connections only between requests; without this,
    each such client holds a socket and a file descriptor for as long as it likes.
    """

    header_timeout_s = 10.0
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._header_timer is None:
            self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _expire(self) -> None:
        self._header_timer = None
        if self.cycle is None or self.cycle.response_complete:
            self.transport.close()


def protocol_with(header_timeout_s: float) -> type[GuardedHttpProtocol]:
    return type(
        "EngramHttpProtocol", (GuardedHttpProtocol,), {"header_timeout_s": header_timeout_s}
    )
