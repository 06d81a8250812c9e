"""The redaction rules applied to what a coding agent's tools saw, and the bound after them."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from app.services.agents.redaction import REDACTED, RULES, redact, redact_text, scrub

GITHUB = "ghp_" + "a1B2c3D4e5" * 4
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"before\n{PRIVATE_KEY}\nafter", "b3BlbnNzaC1rZXktdjEAAAAA"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA cut off", "MIIEpAIBAAKCAQEA"),
        ("aws_access_key_id AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
        ("curl -H 'Authorization: Bearer abc.def-ghi_jkl' x", "abc.def-ghi_jkl"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
        (f"remote: {GITHUB}", GITHUB),
        ("key sk-ant-api03-" + "Q" * 40, "Q" * 40),
        ("OPENAI sk-proj-" + "w" * 30, "w" * 30),
        ("slack xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij"),
        ("engram egk_live-agent-key-0123456789", "egk_live-agent-key-0123456789"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "dozjgN"),
        ("postgres://app:s3cr3t-pw@db:5432/shop", "s3cr3t-pw"),
        ("DB_PASSWORD=hunter2\nDEBUG=1", "hunter2"),
        ("export STRIPE_SECRET_KEY='rk live quoted'", "rk live quoted"),
        ('{"api_key": "k-123456", "name": "shop"}', "k-123456"),
        ("client_secret: abcdef123456", "abcdef123456"),
        ("mysql -u root --password hunter2 shop", "hunter2"),
        ("gh auth login --with-token=tok123abc", "tok123abc"),
    ],
)
def test_each_kind_of_secret_is_redacted(text: str, secret: str) -> None:
    redacted = redact_text(text)
    assert secret not in redacted
    assert REDACTED in redacted


@pytest.mark.parametrize(
    "text",
    [
        "the token is refreshed every hour",
        "MAX_TOKENS=4096 input_tokens=12",
        "tokenizer_path=/models/tok author=bob",
        "password reset e-mails go out at 9",
        "git push origin main",
        "https://example.com/path?q=1",
    ],
)
def test_text_without_secrets_is_kept(text: str) -> None:
    assert redact_text(text) == text


def test_names_are_kept_and_only_values_go() -> None:
    assert redact_text("GITHUB_TOKEN=abc123 make") == f"GITHUB_TOKEN={REDACTED} make"
    assert redact_text("https://u:pw123@host/x") == f"https://u:{REDACTED}@host/x"


def test_redacting_twice_changes_nothing() -> None:
    once = redact_text(f"TOKEN={GITHUB} Authorization: Bearer abcdefghijkl")
    assert redact_text(once) == once


def test_json_members_named_like_secrets_lose_their_value() -> None:
    value = {
        "env": {"DB_PASSWORD": "hunter2", "PORT": "5432"},
        "headers": [{"Authorization": "Bearer abcdefghijkl"}],
        "credentials": {"user": "a", "key": "b"},
        "token_count": 12,
        "command": f"deploy --token {GITHUB}",
    }
    assert redact(value) == {
        "env": {"DB_PASSWORD": REDACTED, "PORT": "5432"},
        "headers": [{"Authorization": REDACTED}],
        "credentials": REDACTED,
        "token_count": 12,
        "command": f"deploy --token {REDACTED}",
    }


def test_scrub_bounds_after_redacting() -> None:
    small = {"file_path": "a.py", "password": "x"}
    assert scrub(small, max_chars=100) == {"file_path": "a.py", "password": REDACTED}
    cut = scrub({"content": f"SECRET={GITHUB}\n" + "z" * 10_000}, max_chars=200)
    assert isinstance(cut, str)
    assert len(cut) < 240
    assert cut.endswith("more characters]")
    assert GITHUB not in cut
    assert scrub("y" * 50, max_chars=10) == "y" * 10 + "... [40 more characters]"
    assert scrub(7, max_chars=1) == 7


def test_scrub_never_cuts_a_secret_in_half() -> None:
    # The secret straddles the cut: redacted first, so no prefix of it is kept.
    text = "x" * 95 + f" token={GITHUB}"
    kept = scrub(text, max_chars=110)
    assert "ghp_" not in kept


def test_long_text_without_blanks_is_redacted_in_linear_time() -> None:
    # Patterns that backtrack over a long word would take seconds here; each rule runs
    # once over 200,000 characters (a base64 blob, a run of one letter, dashes).
    for text in (
        base64.b64encode(os.urandom(150_000)).decode(),
        "a" * 200_000 + "password",
        "-" * 200_000,
        "token_" * 30_000,
    ):
        assert len(redact_text(text)) >= len(text) - 200_000


def test_every_rule_has_a_name() -> None:
    assert all(name for name, _, _ in RULES)


def _shapes() -> list[tuple[str, str]]:
    path = Path(__file__).with_name("secret_shapes.txt")
    rows = [line.split("\t") for line in path.read_text().splitlines()]
    return [(text, secret) for text, secret in (r for r in rows if len(r) == 2)]


@pytest.mark.parametrize(("text", "secret"), _shapes())
def test_secrets_in_the_shapes_tools_print_them_are_redacted(text: str, secret: str) -> None:
    assert secret not in redact_text(text)
    assert secret not in str(redact({"command": text}))


@pytest.mark.parametrize(
    "text",
    [
        "git show 3f786850e387550fdab836ed7e6dc881de23001b",
        "edit src/components/HeaderNavigationBarItem2.tsx",
        "mysql -u root -p shop",
        "curl -u admin https://x",
        "uv run pytest -q tests/test_orders.py -k test_total",
    ],
)
def test_hashes_paths_and_prompts_for_a_password_are_kept(text: str) -> None:
    assert redact_text(text) == text
