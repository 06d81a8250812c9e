"""Settings: environment variables with the ENGRAM_ prefix (nested groups use `__`)."""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app.core.config_groups import (
    Agents,
    AuthMode,
    Embeddings,
    Ingest,
    Learning,
    Limits,
    RateLimit,
    Recall,
    SQLiteSynchronous,
)

__all__ = [
    "LOOPBACK_HOSTS",
    "Agents",
    "AuthMode",
    "Embeddings",
    "Ingest",
    "Learning",
    "Limits",
    "RateLimit",
    "Recall",
    "SQLiteSynchronous",
    "Settings",
    "get_settings",
]

# Names that always reach the service: its own machine.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
_ORIGIN = re.compile(r"^https?://[^/\s]+$")


# A bootstrap key shorter than this is refused: `engram keys create` makes 47 characters.
MIN_BOOTSTRAP_KEY_CHARS = 32


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="ENGRAM_",
        env_nested_delimiter="__",
        env_file=None,
        extra="ignore",
        # Errors name the variable, never its value: some are secrets (keys, passwords).
        hide_input_in_errors=True,
    )

    # Turso's own names are accepted too (ENGRAM_ wins when both are set).
    database_url: str = Field(
        default="sqlite+aiosqlite:///./data/engram.db",
        validation_alias=AliasChoices("database_url", "ENGRAM_DATABASE_URL", "TURSO_DATABASE_URL"),
    )
    # libSQL/Turso: the token sent to the server (a JWT), if it asks for one.
    database_auth_token: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices(
            "database_auth_token", "ENGRAM_DATABASE_AUTH_TOKEN", "TURSO_AUTH_TOKEN"
        ),
    )
    # libSQL/Turso: a local file kept as an embedded replica of the database: reads are
    # served from it, writes go to the server, and it is synced after each write
    # transaction and every database_sync_interval_s.
    database_replica: Path | None = None
    database_sync_interval_s: float = Field(default=1.0, ge=0)
    blob_dir: Path = Path("./data/blobs")
    # Where episode payloads are kept: LevelDB in blob_dir (one process per directory) or
    # rows of the SQL database, written with the index rows (several processes may share it).
    blob_store: Literal["leveldb", "sql"] = "leveldb"
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    auth_mode: AuthMode = AuthMode.AUTO
    protected_mode: bool = True
    bootstrap_key: SecretStr | None = None
    # Host names requests may address (their Host header), comma separated, besides the
    # loopback names and a specific bound address: a DNS name pointed at this machine by
    # someone else's page is refused. `*.example.com` allows subdomains, `*` any name.
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Web origins (scheme://host[:port]) whose pages may call the API from a browser;
    # none by default, so a page of another site is refused.
    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Addresses (IPs or networks, comma separated) of the proxies in front of the service
    # whose X-Forwarded-For and X-Forwarded-Proto are believed: the client's address (rate
    # limits, the audit log) and https (the dashboard's Secure cookie). None by default.
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # How long a dashboard sign-in lasts.
    ui_session_hours: float = Field(default=12.0, gt=0, le=24 * 30)
    migrate_on_start: bool = True
    sqlite_synchronous: SQLiteSynchronous = SQLiteSynchronous.FULL
    sqlite_busy_timeout_ms: int = Field(default=5000, ge=0)
    # The server checkpoints the write-ahead log in a thread of its own this often
    # (app/db/backends/checkpoint.py); 0 leaves it to commits, as SQLite does by default.
    sqlite_checkpoint_interval_ms: int = Field(default=1000, ge=0)
    db_pool_size: int = Field(default=10, ge=1)
    # PostgreSQL: a statement waits at most this long for a lock, and runs at most
    # db_statement_timeout_ms; past either, the request is a 503 instead of hanging.
    db_lock_timeout_ms: int = Field(default=5000, ge=0)
    db_statement_timeout_ms: int = Field(default=60_000, ge=0)
    sweep_interval_s: float = Field(default=3600.0, ge=0)
    auth_cache_ttl_s: float = Field(default=5.0, ge=0)
    log_level: str = "INFO"
    log_requests: bool = True
    # /metrics: request metrics are collected unless disabled; the endpoint answers an
    # operator key (or anyone where the API runs open), or this token when it is set.
    metrics_enabled: bool = True
    metrics_token: SecretStr | None = None
    metrics_cache_s: float = Field(default=5.0, ge=0)
    limits: Limits = Limits()
    rate_limit: RateLimit = RateLimit()
    ingest: Ingest = Ingest()
    recall: Recall = Recall()
    learning: Learning = Learning()
    embeddings: Embeddings = Embeddings()
    agents: Agents = Agents()

    @field_validator("allowed_hosts", "cors_origins", "trusted_proxies", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    @field_validator("cors_origins")
    @classmethod
    def _origins(cls, value: list[str]) -> list[str]:
        for origin in value:
            if not _ORIGIN.match(origin):
                raise ValueError(
                    f"{origin!r} is not an origin: write scheme://host[:port], e.g. "
                    "http://localhost:3000 (a wildcard is not accepted)"
                )
        return [origin.rstrip("/") for origin in value]

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, value: list[str]) -> list[str]:
        for proxy in value:
            try:
                ipaddress.ip_network(proxy, strict=False)
            except ValueError:
                raise ValueError(
                    f"{proxy!r} is not an IP address or network: write e.g. 10.0.0.5 or "
                    "172.16.0.0/12 (a name is not accepted)"
                ) from None
        return value

    @property
    def trusted_hosts(self) -> list[str]:
        """Host names the service answers to: loopback, the bound address when it is a
        specific one, and ENGRAM_ALLOWED_HOSTS."""
        hosts = [*LOOPBACK_HOSTS, *self.allowed_hosts]
        bound = self.host.strip("[]")
        if bound not in ("", "0.0.0.0", "::"):
            hosts.append(bound)
        return hosts

    @field_validator("bootstrap_key")
    @classmethod
    def _bootstrap_key_long_enough(cls, key: SecretStr | None) -> SecretStr | None:
        # An empty value (compose's `${ENGRAM_API_KEY:-}` with the variable unset) would
        # become a random operator key that nobody knows, and every request a 401.
        if key is not None and len(key.get_secret_value()) < MIN_BOOTSTRAP_KEY_CHARS:
            raise ValueError(
                f"the key is {'empty' if not key.get_secret_value() else 'too short'}: "
                f"set it to a random key of {MIN_BOOTSTRAP_KEY_CHARS}+ characters, e.g. "
                """the output of `python3 -c 'import secrets; print("egk_" + """
                """secrets.token_urlsafe(32))'`, or unset it"""
            )
        return key

    @property
    def bound_to_loopback(self) -> bool:
        host = self.host.strip("[]")
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False


@lru_cache
def get_settings() -> Settings:
    return Settings()
