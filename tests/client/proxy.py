"""A real HTTP proxy on loopback that can lose an answer or refuse a request: what a
client's retries meet on a real network, with the server behind it doing the work."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

# What to do with the n-th request (from 0) given its request line: "forward", "drop"
# (forwarded, then the connection closed without its answer), or a status to answer
# with, without forwarding.
Rule = Callable[[int, str], "str | int"]


@dataclass
class Seen:
    line: str
    headers: dict[str, str]


@dataclass
class Proxy:
    upstream_port: int
    rule: Rule
    seen: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def requests(self, prefix: str) -> list[Seen]:
        return [s for s in self.seen if s.line.startswith(prefix)]

    def close(self) -> None:
        self._sock.close()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                self._handle(conn)

    def _handle(self, conn: socket.socket) -> None:
        head, body = _read_request(conn)
        if not head:
            return
        lines = head.decode("latin-1").split("\r\n")
        headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in lines[1:] if line)
        }
        what = self.rule(len(self.seen), lines[0])
        self.seen.append(Seen(lines[0], headers))
        if isinstance(what, int):
            payload = b'{"error": "StoreUnavailable", "detail": "refused by the test proxy"}'
            conn.sendall(
                f"HTTP/1.1 {what} Refused\r\nContent-Type: application/json\r\n"
                f"Retry-After: 0\r\nContent-Length: {len(payload)}\r\n"
                "Connection: close\r\n\r\n".encode()
                + payload
            )
            return
        kept = [line for line in lines[1:] if line and not line.lower().startswith("connection:")]
        request = "\r\n".join([lines[0], *kept, "Connection: close", "", ""]).encode("latin-1")
        with socket.create_connection(("127.0.0.1", self.upstream_port)) as up:
            up.sendall(request + body)
            answer = b""
            while chunk := up.recv(65536):
                answer += chunk
        if what == "forward":
            conn.sendall(answer)
        # "drop": the server did the work; the client never hears of it.


def _read_request(conn: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return b"", b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        body += conn.recv(65536)
    return head, body


def forward_all(n: int, line: str) -> str | int:
    return "forward"
