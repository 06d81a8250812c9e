"""API keys, roles and the auth mode (with protected mode, after Redis)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import AuthMode, Settings
from app.core.errors import Forbidden, StartupRefused, Unauthorized
from app.core.ids import uuid7
from app.db.engine import Transactions
from app.models import ApiKey
from app.repositories.api_keys import ApiKeyRepository
from app.schemas.memory import within_sensitivity
from app.services.access.ratelimit import RateLimiter

log = logging.getLogger("engram.auth")
KEY_PREFIX = "egk_"
DEFAULT_NAMESPACE = "default"
# A key reads everything but restricted memories unless created with more.
DEFAULT_KEY_SENSITIVITY = "high"
T = TypeVar("T")


class Role(StrEnum):
    # reader: reads its namespace; agent: also writes it; admin: also manages its keys and
    # reads its audit log; operator: the whole service (keys of every namespace, backups).
    READER = "reader"
    AGENT = "agent"
    ADMIN = "admin"
    OPERATOR = "operator"


_RANK = {Role.READER: 0, Role.AGENT: 1, Role.ADMIN: 2, Role.OPERATOR: 3}


@dataclass(frozen=True, slots=True)
class Principal:
    namespace: str
    role: Role
    key_id: str | None  # None in open mode
    # The highest memory sensitivity this caller may read: requests are capped at it, and
    # listings redact the content of memories above it.
    max_sensitivity: str = "restricted"

    def may_read(self, sensitivity: str) -> bool:
        return within_sensitivity(sensitivity, self.max_sensitivity)

    def at_least(self, role: Role) -> bool:
        return _RANK[self.role] >= _RANK[role]

    @property
    def actor(self) -> str:
        return f"key:{self.key_id}" if self.key_id else "open"

    def require(self, role: Role) -> None:
        if not self.at_least(role):
            raise Forbidden(
                f"this action needs the {role.value} role; the key has {self.role.value}"
            )


# Open mode trusts every caller (loopback only, unless protected mode is off): the
# command line on this machine could do all of it anyway.
OPEN = Principal(DEFAULT_NAMESPACE, Role.OPERATOR, None)


def hash_key(key: str) -> str:
    # Keys are 256-bit random tokens, so a plain SHA-256 is enough (no brute force possible).
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


async def create_key(
    session: AsyncSession,
    *,
    namespace: str,
    role: Role,
    name: str | None,
    key: str | None = None,
    max_sensitivity: str = DEFAULT_KEY_SENSITIVITY,
) -> tuple[ApiKey, str]:
    """Store a new key (hashed) and return it with its plaintext, which is never stored."""
    plaintext = key or new_key()
    record = ApiKey(
        id=uuid7(),
        namespace=namespace,
        role=role.value,
        max_sensitivity=max_sensitivity,
        name=name,
        prefix=plaintext[:12],
        key_hash=hash_key(plaintext),
        created_at=datetime.now(UTC),
        revoked_at=None,
    )
    await ApiKeyRepository(session).add(record)
    return record, plaintext


class Authenticator:
    """Resolves a request's key to a principal; caches lookups for `auth_cache_ttl_s`."""

    def __init__(
        self,
        settings: Settings,
        transactions: Transactions,
    ) -> None:
        self.settings = settings
        # Lookups are reads of their own, shared by the requests that wait for the same
        # key (so not one request's session); only the start-up writes.
        self.transactions = transactions
        self._ttl = settings.auth_cache_ttl_s
        self._cache: dict[str, tuple[float, Principal | None]] = {}
        self._keys_exist: tuple[float, bool] | None = None
        # Lookups in flight: when a cached answer expires under load, the requests that
        # arrive meanwhile wait for the one query instead of each sending their own.
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._open_here = settings.bound_to_loopback or not settings.protected_mode
        rates = settings.rate_limit
        self.rates = RateLimiter(per_second=rates.per_second, burst=rates.burst)
        self.failures = RateLimiter(
            per_second=rates.auth_failures_per_second, burst=rates.auth_failures_burst
        )

    async def startup(self, *, warn: bool = True) -> None:
        """Store the bootstrap key if given; refuse to run open on a public address."""
        async with self.transactions.write() as session:
            repo = ApiKeyRepository(session)
            if self.settings.bootstrap_key is not None:
                # Stored once per key: `engram serve` calls this before binding and the
                # lifespan again, and every restart does. The key's hash is unique, so an
                # insert that finds it already there (revoked, or stored at the same time
                # by another process) changes nothing.
                key = self.settings.bootstrap_key.get_secret_value()
                if await repo.by_hash(hash_key(key)) is None:
                    try:
                        async with session.begin_nested():
                            await create_key(
                                session,
                                namespace=DEFAULT_NAMESPACE,
                                role=Role.OPERATOR,
                                name="bootstrap",
                                key=key,
                                # The operator's own key reads every memory.
                                max_sensitivity="restricted",
                            )
                        log.info("stored the bootstrap key as an operator key (namespace default)")
                    except IntegrityError:
                        if await repo.by_hash(hash_key(key)) is None:
                            log.warning(
                                "the bootstrap key (ENGRAM_BOOTSTRAP_KEY) was revoked: it is "
                                "not stored again and does not authenticate"
                            )
            active = await repo.count_active()
        self._keys_exist = (time.monotonic(), active > 0)
        if self._runs_open(active > 0):
            if not self._open_allowed_here():
                raise StartupRefused(
                    f"refusing to serve without authentication on {self.settings.host}: "
                    "no API key exists. Create one with `engram keys create --namespace NAME "
                    "--role admin` (or set ENGRAM_BOOTSTRAP_KEY), bind to 127.0.0.1, or set "
                    "ENGRAM_PROTECTED_MODE=false to accept unauthenticated requests from anywhere."
                )
            if warn:
                log.warning(
                    "no API key exists: serving without authentication in namespace 'default'",
                    extra={"host": self.settings.host},
                )

    def _runs_open(self, keys_exist: bool) -> bool:
        mode = self.settings.auth_mode
        return mode is AuthMode.OFF or (mode is AuthMode.AUTO and not keys_exist)

    def _open_allowed_here(self) -> bool:
        return self._open_here

    async def _any_keys(self) -> bool:
        now = time.monotonic()
        if self._keys_exist is not None and now - self._keys_exist[0] < self._ttl:
            return self._keys_exist[1]
        return await self._once("", self._count_keys)

    async def _count_keys(self) -> bool:
        now = time.monotonic()
        async with self.transactions.read() as session:
            exist = await ApiKeyRepository(session).count_active() > 0
        self._keys_exist = (now, exist)
        return exist

    async def _once(self, name: str, fetch: Callable[[], Awaitable[T]]) -> T:
        """fetch(), or the answer of the same fetch already in flight."""
        task = self._pending.get(name)
        if task is None:
            task = self._pending[name] = asyncio.ensure_future(fetch())
            task.add_done_callback(lambda done: self._settled(name, done))
        # Shielded: a caller that goes away does not cancel the others' lookup.
        result: T = await asyncio.shield(task)
        return result

    def _settled(self, name: str, task: asyncio.Future[Any]) -> None:
        if self._pending.get(name) is task:  # not one that forget() has replaced
            del self._pending[name]

    async def authenticate(self, token: str | None, *, client: str = "") -> Principal:
        """The caller's principal; 401 without a valid key, 429 over the key's rate."""
        if token:
            try:
                principal = await self._lookup(token)
            except Unauthorized:
                # Past a burst of wrong keys from one address, the answer is 429 with the
                # time to wait: well-behaved clients back off, and the log shows it.
                self.failures.check(client, "failed authentications from this address")
                raise
            assert principal.key_id is not None
            self.rates.check(principal.key_id, "this API key")
            return principal
        if self.settings.auth_mode is not AuthMode.KEYS and self._open_allowed_here():
            if self._runs_open(await self._any_keys()):
                return OPEN
        raise Unauthorized("an API key is required: send `Authorization: Bearer <key>`")

    def forget(self) -> None:
        """Drop cached lookups, so that a key revoked here stops working at once."""
        self._cache.clear()
        self._keys_exist = None
        self._pending.clear()  # a lookup in flight may predate the change

    async def _lookup(self, token: str) -> Principal:
        digest = hash_key(token)
        now = time.monotonic()
        cached = self._cache.get(digest)
        if cached is not None and now - cached[0] < self._ttl:
            principal = cached[1]
        else:
            principal = await self._once(digest, lambda: self._fetch(digest))
        if principal is None:
            raise Unauthorized("invalid or revoked API key")
        return principal

    async def _fetch(self, digest: str) -> Principal | None:
        now = time.monotonic()
        async with self.transactions.read() as session:
            record = await ApiKeyRepository(session).by_hash(digest)
        principal = None
        if record is not None and hmac.compare_digest(record.key_hash, digest):
            principal = Principal(
                record.namespace, Role(record.role), record.id, record.max_sensitivity
            )
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[digest] = (now, principal)
        return principal
