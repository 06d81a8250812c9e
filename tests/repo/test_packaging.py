"""What ships beside the code: the Dockerfile, docker-compose.yml, CI and the README's
commands (the entrypoint itself runs in tests/cli/test_commands.py)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined, comments dropped."""
    text = (ROOT / "Dockerfile").read_text()
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    found = []
    for line in joined.splitlines():
        if line.strip():
            instruction, _, args = line.strip().partition(" ")
            found.append((instruction.upper(), args.strip()))
    return found


def test_healthcheck_and_entrypoint_are_exec_form() -> None:
    instructions = dockerfile_instructions()
    (healthcheck,) = [args for name, args in instructions if name == "HEALTHCHECK"]
    command = json.loads(healthcheck.split(" CMD ", 1)[1])
    assert command[:2] == ["python", "-c"]
    assert "/health" in command[2]
    for name in ("ENTRYPOINT", "CMD"):
        (args,) = [args for n, args in instructions if n == name]
        assert isinstance(json.loads(args), list)


def test_the_image_installs_the_locked_versions() -> None:
    runs = [args for name, args in dockerfile_instructions() if name == "RUN"]
    installs = [run for run in runs if "pip install" in run]
    assert installs
    assert all("-c constraints.txt" in run for run in installs)
    copies = [args for name, args in dockerfile_instructions() if name == "COPY"]
    assert any("constraints.txt" in args.split() for args in copies)


def test_compose_requires_an_api_key() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    key = compose["services"]["engram"]["environment"]["ENGRAM_BOOTSTRAP_KEY"]
    # `${VAR:?message}`: compose refuses to start while ENGRAM_API_KEY is unset or empty,
    # instead of handing the service an empty key.
    assert re.fullmatch(r"\$\{ENGRAM_API_KEY:\?[^}]*32\+ characters[^}]*\}", key), key


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    (ci_command,) = re.findall(r'^TEST_CMD="(.*)"$', ci, flags=re.MULTILINE)
    readme = (ROOT / "README.md").read_text()
    assert f"```sh\n{ci_command}\n```" in readme
    words = shlex.split(ci_command)
    assert words[words.index("install") :][:5] == ["install", "-q", "-c", "constraints.txt", "-e"]
    assert "hadolint --failure-threshold style Dockerfile" in ci
