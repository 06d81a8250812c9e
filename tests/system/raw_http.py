"""HTTP/1.1 as bytes over asyncio streams: a request written in one piece and a response
read back, so a client costs little CPU next to the server it drives on the same machine
(the soak's clients, tests/system/soak_load.py; the benchmarks' bench/loadgen.py)."""

from __future__ import annotations

import asyncio


def build_request(
    method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> bytes:
    """One request's bytes (Host 127.0.0.1; a body is sent as JSON)."""
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    for k, v in (headers or {}).items():
        lines.append(f"{k}: {v}")
    if body is not None:
        lines.append("Content-Type: application/json")
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """One response's status and body (Content-Length or chunked, as a stream sends it)."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    chunked = False
    for line in head.split(b"\r\n")[1:]:
        if line[:15].lower() == b"content-length:":
            length = int(line[15:].strip())
        elif line.lower() == b"transfer-encoding: chunked":
            chunked = True
    if not chunked:
        return status, await reader.readexactly(length) if length else b""
    parts = []
    while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
    await reader.readuntil(b"\r\n")  # the empty trailer section
    return status, b"".join(parts)
