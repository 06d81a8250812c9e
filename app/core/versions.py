"""Supported releases of the libraries whose private classes Engram subclasses.

A module that builds on a library's internals declares the releases it was tested with
and checks them before it imports those internals: outside the range the process stops
with one sentence naming the library, the installed release and the supported ones,
instead of an ImportError (or a subtle misbehaviour) deep inside the library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import metadata


class UnsupportedVersion(RuntimeError):
    """An installed library is outside the releases a module of Engram supports."""


def release(version: str) -> tuple[int, ...]:
    """The numeric release of a version string: "2.1.0b1" -> (2, 1, 0), "0.54" -> (0, 54)."""
    match = re.match(r"\d+(?:\.\d+)*", version)
    if match is None:
        raise ValueError(f"not a version: {version!r}")
    parts = tuple(int(part) for part in match.group().split("."))
    # Trailing zeros do not change a release: (2, 1) == (2, 1, 0).
    while len(parts) > 1 and parts[-1] == 0:
        parts = parts[:-1]
    return parts


@dataclass(frozen=True, slots=True)
class Supported:
    """Releases `at_least` <= version < `below` of `distribution`, as used by `user`."""

    distribution: str
    at_least: str
    below: str
    user: str

    @property
    def spec(self) -> str:
        return f">={self.at_least},<{self.below}"

    def allows(self, version: str) -> bool:
        return release(self.at_least) <= release(version) < release(self.below)

    def check(self, version: str | None = None) -> str:
        """The installed version (or `version`); UnsupportedVersion outside the range."""
        found = version if version is not None else metadata.version(self.distribution)
        if not self.allows(found):
            raise UnsupportedVersion(
                f"{self.distribution} {found} is installed, but {self.user} supports "
                f"{self.distribution}{self.spec} only (it builds on private classes): "
                f"install one with `pip install '{self.distribution}{self.spec}'`"
            )
        return found
