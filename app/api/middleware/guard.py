"""Pure ASGI middleware: refuse requests a web page could make on the user's behalf.

A page the developer visits can reach a service on their machine: a no-cors `fetch`
sends a `text/plain` or form body without asking the server first, and a name the
attacker's DNS points at 127.0.0.1 (rebinding) makes the page same-origin with it. In
open mode such a request would be trusted as the local user. So every request must

- name an allowed host in `Host` (loopback names unless ENGRAM_ALLOWED_HOSTS says more),
  which defeats DNS rebinding: the browser sends the attacker's name;
- not come from another site: a cross-origin `Origin` (unless listed in
  ENGRAM_CORS_ORIGINS) or `Sec-Fetch-Site: cross-site` is refused, except a plain
  top-level navigation (a link to /docs), whose answer the linking page cannot read;
- send a body only as JSON: any other media type is a 415 before the body is read
  (browsers send JSON cross-site only after a CORS preflight, which is never granted
  unless configured).
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

JSON_TYPES = frozenset({b"application/json"})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORTS = {b"http": b"80", b"https": b"443"}


def host_name(host: bytes) -> bytes:
    """`Host` without its port, lower case ("[::1]:8080" -> "::1")."""
    host = host.strip().lower()
    if host.startswith(b"["):
        end = host.find(b"]")
        return host[1:end] if end > 0 else host
    if host.count(b":") == 1:
        return host.partition(b":")[0]
    return host


class HostPatterns:
    """Host names allowed: exact names, `*.example.com` (subdomains only) or `*` (any)."""

    def __init__(self, patterns: Sequence[str]) -> None:
        names = [p.strip().lower().strip("[]") for p in patterns if p.strip()]
        self.any = "*" in names
        self.exact = frozenset(n.encode() for n in names if not n.startswith("*"))
        self.suffixes = tuple(n[1:].encode() for n in names if n.startswith("*."))

    def allows(self, name: bytes) -> bool:
        return self.any or name in self.exact or (bool(name) and name.endswith(self.suffixes))


def _origin_authority(origin: bytes) -> bytes | None:
    """`scheme://host[:port]` as `host:port` with the scheme's default port made explicit;
    None for anything else (`null`, a path, an unknown scheme)."""
    scheme, sep, rest = origin.strip().lower().partition(b"://")
    if not sep or scheme not in _DEFAULT_PORTS or not rest or b"/" in rest:
        return None
    return _with_port(rest, scheme)


def _with_port(authority: bytes, scheme: bytes) -> bytes:
    authority = authority.strip().lower()
    bracket = authority.rfind(b"]")
    if b":" in authority[bracket + 1 :]:
        return authority
    return authority + b":" + _DEFAULT_PORTS.get(scheme, b"80")


def _media_type(value: bytes) -> bytes:
    return value.partition(b";")[0].strip().lower()


class RequestGuard:
    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: Sequence[str],
        cors_origins: Sequence[str] = (),
    ) -> None:
        self.app = app
        self.hosts = HostPatterns(allowed_hosts)
        self.cors_origins = frozenset(o.strip().lower().rstrip("/").encode() for o in cors_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = origin = fetch_site = fetch_mode = content_type = length = None
        chunked = False
        for name, value in scope["headers"]:
            if name == b"host":
                host = value
            elif name == b"origin":
                origin = value
            elif name == b"sec-fetch-site":
                fetch_site = value
            elif name == b"sec-fetch-mode":
                fetch_mode = value
            elif name == b"content-type":
                content_type = value
            elif name == b"content-length":
                length = value
            elif name == b"transfer-encoding":
                chunked = True
        refusal = self._refusal(scope, host, origin, fetch_site, fetch_mode)
        if refusal is None and scope["method"] in _BODY_METHODS:
            refusal = self._body_refusal(content_type, length, chunked)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, error, detail, field = refusal
        body = orjson.dumps({"error": error, "detail": detail, "field": field})
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"vary", b"Origin"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def _refusal(
        self,
        scope: Scope,
        host: bytes | None,
        origin: bytes | None,
        fetch_site: bytes | None,
        fetch_mode: bytes | None,
    ) -> tuple[int, str, str, str] | None:
        if host is None or not self.hosts.allows(host_name(host)):
            shown = "none" if host is None else repr(host.decode("latin-1")[:100])
            return (
                400,
                "UntrustedHost",
                f"Host {shown} is not served here; add its name to ENGRAM_ALLOWED_HOSTS",
                "Host",
            )
        if origin is not None:
            if origin.strip().lower().rstrip(b"/") in self.cors_origins:
                return None
            own = _with_port(host, scope.get("scheme", "http").encode())
            if _origin_authority(origin) != own:
                return (
                    403,
                    "CrossOriginRefused",
                    f"requests from {origin.decode('latin-1')[:100]!r} are refused: "
                    "only this service's own pages, or origins in ENGRAM_CORS_ORIGINS, may call it",
                    "Origin",
                )
            return None
        if fetch_site == b"cross-site" and not (
            fetch_mode == b"navigate" and scope["method"] in ("GET", "HEAD")
        ):
            return (
                403,
                "CrossOriginRefused",
                "requests from another site's page are refused",
                "Sec-Fetch-Site",
            )
        return None

    @staticmethod
    def _body_refusal(
        content_type: bytes | None, length: bytes | None, chunked: bool
    ) -> tuple[int, str, str, str] | None:
        if content_type is None:
            if chunked or (length is not None and length.strip() not in (b"", b"0")):
                return (
                    415,
                    "UnsupportedMediaType",
                    "a body must be sent as Content-Type: application/json",
                    "Content-Type",
                )
            return None
        if _media_type(content_type) in JSON_TYPES:
            return None
        return (
            415,
            "UnsupportedMediaType",
            f"Content-Type {content_type.decode('latin-1')[:100]!r} is not accepted: "
            "send the body as application/json",
            "Content-Type",
        )
