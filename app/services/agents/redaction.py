"""Secrets taken out of what an agent's tools saw, by rule, before it is stored.

The rules are patterns of the secrets a coding session meets: private keys, cloud and
service tokens, bearer and basic credentials, passwords in URLs and command lines, and
`.env`-style assignments whose name says they hold a secret. A JSON value is walked: an
object's member named like a secret loses its value whatever it is, every string is
scanned. What is kept is cut after redaction, so a cut cannot expose a secret's start."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import orjson

from app.schemas.common import storable

REDACTED = "[REDACTED]"

# Names that say a value is a secret (keys of objects, names of variables and flags).
_SECRET_WORDS = (
    r"pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|client[_-]?secret|credentials?|auth(?:orization)?|session[_-]?key|"
    r"cookie|signature|dsn|account[_-]?key|shared[_-]?access[_-]?key|sas[_-]?token"
)
_SECRET_NAME = re.compile(
    rf"(?:^|[^a-z0-9])(?:{_SECRET_WORDS})(?:$|[^a-z0-9])|(?:{_SECRET_WORDS})$"
)
# Names that contain a secret word but name no secret.
_HARMLESS_NAME = re.compile(r"(?:^|_)(?:max|num|count|total|input|output|used)_?tokens?$|^tokens$")


_VALUE = r"(?!\[REDACTED\])(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s,;&|)}\]\"'-][^\s,;&|)}\]\"']*)"


def _sub(pattern: str, repl: str | Callable[[re.Match[str]], str], flags: int = 0) -> Any:
    return re.compile(pattern, flags), repl


def _keep_name(match: re.Match[str]) -> str:
    return f"{match.group('name')}{match.group('sep')}{REDACTED}"


def _if_random(match: re.Match[str]) -> str:
    """A run of base64's alphabet redacted if it looks random: capitals, small letters
    and digits each as often as chance gives them at least (about 16, 16 and 6 of 40)."""
    text = match.group(0)
    capitals = sum(c.isupper() for c in text)
    small = sum(c.islower() for c in text)
    digits = sum(c.isdigit() or c in "/+" for c in text)
    return REDACTED if capitals >= 6 and small >= 6 and digits >= 2 else text


# Applied in order: whole-secret shapes first, then the named assignments around them.
RULES: list[tuple[str, re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (
        "private key block",
        *_sub(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            REDACTED,
            re.DOTALL,
        ),
    ),
    ("AWS access key id", *_sub(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b", REDACTED)),
    (
        "bearer or basic credential",
        *_sub(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}", rf"\1 {REDACTED}", re.I),
    ),
    (
        "service token",
        *_sub(
            r"\b(?:"
            r"egk_[A-Za-z0-9_-]{4,}"  # Engram's own keys
            r"|sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}"  # Anthropic, OpenAI
            r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
            r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
            r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
            r"|AIza[0-9A-Za-z_-]{35}"  # Google
            r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe
            r"|npm_[A-Za-z0-9]{36}"  # npm
            r"|pypi-AgE[A-Za-z0-9_-]{40,}"  # PyPI
            r"|hf_[A-Za-z0-9]{30,}"  # Hugging Face
            r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"  # SendGrid
            r"|ya29\.[A-Za-z0-9_-]{20,}"  # Google OAuth access token
            r"|dop_v1_[a-f0-9]{64}"  # DigitalOcean
            r"|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"  # Shopify
            r"|dckr_pat_[A-Za-z0-9_-]{20,}"  # Docker Hub
            r"|glc_[A-Za-z0-9+/=_-]{30,}"  # Grafana
            r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JWT
            r")",
            REDACTED,
        ),
    ),
    (
        # A bare AWS secret access key: 40 characters of base64's alphabet that look random
        # (a git hash is lower-case hex, a path of that length has few capitals).
        "AWS secret access key",
        *_sub(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])", _if_random),
    ),
    (
        # curl -u user:password (--user, --proxy-user), httpie -a user:password: the user stays.
        "user and password flag",
        *_sub(
            r"(?P<name>(?<![\w-])(?:-u|--user|--proxy-user|-U|-a|--auth)(?:\s+|=)[\"']?[^\s:\"']+)"
            r"(?P<sep>:)(?!\[REDACTED\])[^\s\"']+",
            _keep_name,
        ),
    ),
    (
        # mysql -pSECRET (the password glued to -p), sshpass -p SECRET, redis-cli -a SECRET.
        "password option",
        *_sub(
            r"(?P<name>\b(?:(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n|;&]*?\s-p"
            r"|sshpass\s+-p\s*|redis-cli\b[^\n|;&]*?\s-a\s+))(?P<sep>)(?!\[REDACTED\])[^\s\"']+",
            _keep_name,
        ),
    ),
    (
        "password in a URL",
        *_sub(
            r"(?P<name>(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^\s:/@]+)(?P<sep>:)[^\s@/]+(?=@)",
            _keep_name,
            re.I,
        ),
    ),
    (
        "secret assignment",
        # KEY=VALUE, KEY: VALUE, "key": "value" where the name says secret; the value runs
        # to the end of its quotes or to the next blank or separator.
        *_sub(
            r"(?P<name>(?<![\w.-])[\"']?[\w.-]{1,100}[\"']?)"
            rf"(?P<sep>\s*[:=]\s*){_VALUE}",
            lambda m: _keep_name(m) if _secret_name(m.group("name")) else m.group(0),
            re.I,
        ),
    ),
    (
        "secret flag",
        # --password VALUE, --token=VALUE on a command line.
        *_sub(
            r"(?P<name>(?<![\w-])--?[\w.-]{1,100})"
            rf"(?P<sep>\s+|=){_VALUE}",
            lambda m: _keep_name(m) if _secret_name(m.group("name")) else m.group(0),
            re.I,
        ),
    ),
]


def _secret_name(name: str) -> bool:
    bare = name.strip("-\"' ").lower()
    if not bare or _HARMLESS_NAME.search(bare):
        return False
    return _SECRET_NAME.search(bare) is not None


def _holds_text(value: Any) -> bool:
    # A count or a flag named like a secret (`token_count`, `password_set`) stays.
    return isinstance(value, str | list | dict) and bool(value)


def redact_text(text: str) -> str:
    """The text with every secret the rules find replaced by [REDACTED]."""
    for _, pattern, repl in RULES:
        text = pattern.sub(repl, text)
    return text


def redact(value: Any) -> Any:
    """A JSON value with its secrets redacted: members named like secrets lose their value,
    strings are scanned."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {
            key: REDACTED if _secret_name(str(key)) and _holds_text(item) else redact(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [redact(item) for item in value]
    return value


def _cut(text: str, limit: int, *, total: int) -> str:
    """`text` (the redacted start of a text of `total` characters) cut to `limit`."""
    if total <= limit and len(text) <= limit:
        return text
    return f"{text[:limit]}... [{max(total, len(text)) - limit} more characters]"


def _storable(value: Any) -> bool:
    """What the stores' JSON takes (the schemas' own rule: 64-bit integers, finite numbers)."""
    try:
        storable(value)
    except ValueError:
        return False
    return True


def scrub(value: Any, *, max_chars: int) -> Any:
    """A JSON value redacted, then bounded: a string or a value whose JSON is longer than
    `max_chars` (or that the stores cannot encode) becomes the start of its text and a
    marker. Only a slice of a long string is scanned (the rules' cost grows with it)."""
    if isinstance(value, str):
        return _cut(redact_text(value[: max_chars * 2]), max_chars, total=len(value))
    if value is None or isinstance(value, bool):
        return value
    if _storable(value):
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
        if len(text) <= max_chars:
            return redact(value)
    else:
        text = json.dumps(value, default=str)
    return _cut(redact_text(text[: max_chars * 2]), max_chars, total=len(text))
