"""docker-compose.yml as compose reads it (tests have no Docker engine): its services, the
services a profile and a command start, a service's environment with `${...}` filled in
as compose fills it, the settings Engram makes of it, and docker/Caddyfile's proxy."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from unittest import mock

import yaml

from app.core.config import Settings

ROOT = Path(__file__).resolve().parents[1]
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"
# The API key compose is run with in these tests (32+ characters, as the service asks).
API_KEY = "egk_" + "k" * 40

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_TOKEN = re.compile(rf"\$\$|\$\{{(?P<braced>[^}}]*)\}}|\$(?P<named>{_NAME})|(?P<bad>\$)")
_BRACED = re.compile(rf"(?P<name>{_NAME})(?:(?P<op>:?[-?])(?P<arg>.*))?", re.DOTALL)


class Unset(Exception):
    """`${VAR:?message}` with VAR unset or empty: compose stops with the message."""


def interpolate(value: str, env: Mapping[str, str]) -> str:
    """`value` as compose passes it on: `$$` is `$`; `${VAR}`, `$VAR`, `${VAR:-default}`,
    `${VAR-default}`, `${VAR:?message}`, `${VAR?message}`; any other `$` is an error."""

    def one(match: re.Match[str]) -> str:
        if match["bad"] is not None:
            raise ValueError(f"invalid interpolation at {match.start()} in {value!r}")
        if match["named"] is not None:
            return env.get(match["named"], "")
        if match["braced"] is None:
            return "$"
        braced = _BRACED.fullmatch(match["braced"])
        if braced is None:
            raise ValueError(f"invalid interpolation {match[0]!r}")
        name, op, arg = braced["name"], braced["op"], braced["arg"]
        found = env.get(name)
        missing = found is None or (op is not None and op.startswith(":") and found == "")
        if op is None or not missing:
            return found or ""
        if op.endswith("?"):
            raise Unset(arg)
        return arg

    return _TOKEN.sub(one, value)


def load() -> dict[str, Any]:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert isinstance(compose, dict)
    return compose


def services() -> dict[str, dict[str, Any]]:
    found = load()["services"]
    assert isinstance(found, dict)
    return found


def in_profile(profile: str) -> set[str]:
    """The services that only `--profile <profile>` enables."""
    return {name for name, s in services().items() if profile in s.get("profiles", [])}


def started(profile: str | None, targets: Iterable[str] = ()) -> set[str]:
    """What `docker compose [--profile P] up [TARGETS]` starts: the targets and what they
    depend on, or, without targets, every service the profile enables (those without a
    profile always are)."""
    every = services()
    todo = list(targets) or [
        name for name, s in every.items() if not s.get("profiles") or profile in s["profiles"]
    ]
    found: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo.extend(every[name].get("depends_on", {}))
    return found


def environment(name: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables compose hands the service `name`, run with `env` (by default the API
    key alone) in its own environment."""
    env = {"ENGRAM_API_KEY": API_KEY} if env is None else env
    given = services()[name].get("environment", {})
    if isinstance(given, list):
        given = dict(item.split("=", 1) for item in given)
    return {key: interpolate(str(value), env) for key, value in given.items()}


def image_env() -> dict[str, str]:
    """The ENGRAM_ variables the image sets (the Dockerfile's last stage's ENV)."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / "Dockerfile").read_text())
    last_stage = text.rsplit("\nFROM ", 1)[1]
    found = {}
    for line in last_stage.splitlines():
        if line.startswith("ENV "):
            for pair in shlex.split(line[4:]):
                key, _, value = pair.partition("=")
                if key.startswith("ENGRAM_"):
                    found[key] = value
    return found


def settings_of(variables: Mapping[str, str]) -> Settings:
    """The settings Engram reads in the container: the image's variables, then these (none
    of this process's)."""
    with mock.patch.dict(os.environ, {**image_env(), **variables}, clear=True):
        return Settings()


def command(name: str) -> list[str]:
    """The arguments compose hands the image's entrypoint (the image's CMD, `serve`, when
    the service names none)."""
    return list(services()[name].get("command", ["serve"]))


def runs_engram(name: str) -> bool:
    """Whether the service `name` runs Engram's image."""
    return bool(services()[name].get("image") == services()["engram"]["image"])


def caddy_upstreams(caddyfile: str) -> tuple[str, list[str], dict[str, list[str]]]:
    """docker/Caddyfile's one site: its address, the upstreams of its reverse_proxy, and
    the reverse_proxy block's settings (name -> arguments; a nested block's lines are
    `name.field`)."""
    lines = [line.split("#", 1)[0].strip() for line in caddyfile.splitlines()]
    lines = [line for line in lines if line]
    site = lines[0].removesuffix("{").strip()
    (proxy_at,) = [i for i, line in enumerate(lines) if line.startswith("reverse_proxy ")]
    upstreams = lines[proxy_at].removesuffix("{").split()[1:]
    block: dict[str, list[str]] = {}
    nested: str | None = None
    for line in lines[proxy_at + 1 :]:
        if line == "}":
            if nested is None:
                break
            nested = None
            continue
        words = line.split()
        if words[-1] == "{":
            nested = words[0]
            continue
        block[f"{nested}.{words[0]}" if nested else words[0]] = words[1:]
    return site, upstreams, block
