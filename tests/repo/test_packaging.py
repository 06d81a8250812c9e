"""What ships beside the code: the Dockerfile, docker-compose.yml's profiles and its
proxy's docker/Caddyfile, the entrypoint's choice to migrate, CI and the README's commands
(the entrypoint serving runs in tests/cli/test_commands.py, the profiles' processes outside
Docker in tests/system/test_compose_layout.py)."""

from __future__ import annotations

import ipaddress
import json
import re
import shlex
import subprocess
import threading
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from app.api.middleware.guard import HostPatterns
from app.db.backends import kind_for
from app.db.backends.libsql import LibSQLBackend, server_url
from tests import compose
from tests.compose import API_KEY, Unset

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


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    (ci_command,) = re.findall(r'^TEST_CMD="(.*)"$', ci, flags=re.MULTILINE)
    readme = (ROOT / "README.md").read_text()
    assert f"```sh\n{ci_command}\n```" in readme
    words = shlex.split(ci_command)
    assert words[words.index("install") :][:5] == ["install", "-q", "-c", "constraints.txt", "-e"]
    assert "hadolint --failure-threshold style Dockerfile" in ci


@pytest.mark.parametrize(
    ("target_arch", "build_arch", "installed"),
    [
        ("amd64", "amd64", ".[libsql,embeddings]"),
        ("arm64", "arm64", ".[embeddings]"),
        # The classic builder sets no TARGETARCH: the build stage's own architecture decides.
        ("", "amd64", ".[libsql,embeddings]"),
        ("", "arm64", ".[embeddings]"),
    ],
)
def test_the_image_has_the_libsql_driver_on_amd64_only(
    tmp_path: Path, target_arch: str, build_arch: str, installed: str
) -> None:
    """The Dockerfile's install step, run by its own shell with a stand-in python, pip
    and dpkg: libsql-experimental has Linux wheels for x86_64 only."""
    instructions = dockerfile_instructions()
    (shell,) = [json.loads(args) for name, args in instructions if name == "SHELL"]
    (install,) = [args for name, args in instructions if name == "RUN" and "$extras" in args]
    venv, bin_dir = tmp_path / "venv", tmp_path / "bin"
    (venv / "bin").mkdir(parents=True)
    bin_dir.mkdir()
    for path, body in [
        (venv / "bin" / "pip", 'echo "$@"'),
        (bin_dir / "python", "exit 0"),
        (bin_dir / "dpkg", f"echo {build_arch}"),
    ]:
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    r = subprocess.run(
        [*shell, install.replace("/opt/engram", str(venv))],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "TARGETARCH": target_arch},
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["install", "-c", "constraints.txt", installed]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(
        d.startswith("libsql-experimental") for d in extras["optional-dependencies"]["libsql"]
    )


# The services each layout runs; `docker compose --profile P up` enables those without a
# profile too (`engram`), so a profile's command names the services it starts.
LAYOUTS: dict[str | None, set[str]] = {
    None: {"engram"},
    "postgres": {"postgres", "migrate", "api-1", "api-2", "proxy", "worker"},
    "turso": {"sqld", "engram-turso"},
}
_UP = re.compile(r"docker compose (?:--profile (\S+) )?up -d((?: [a-z0-9-]+)*)")


def docker_section() -> str:
    readme = (ROOT / "README.md").read_text()
    return readme.split("\n## Docker\n", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("where", ["README.md", "docker-compose.yml"])
def test_each_layout_has_one_command_that_starts_it_whole(where: str) -> None:
    text = docker_section() if where == "README.md" else (ROOT / where).read_text()
    commands = {m[1]: m[2].split() for m in _UP.finditer(text)}
    assert commands.keys() == LAYOUTS.keys()
    for profile, targets in commands.items():
        assert compose.started(profile, targets) == LAYOUTS[profile], profile
        if profile is not None:
            assert compose.in_profile(profile) == LAYOUTS[profile]
    assert {n for n, s in compose.services().items() if not s.get("profiles")} == LAYOUTS[None]


def test_the_default_is_engram_alone() -> None:
    settings = compose.settings_of(compose.environment("engram"))
    assert kind_for(settings).name == "sqlite"
    assert settings.blob_store == "leveldb"
    assert settings.learning.worker
    assert str(settings.blob_dir).startswith("/var/lib/engram/")
    assert "engram-data:/var/lib/engram" in compose.services()["engram"]["volumes"]


def test_every_api_service_requires_an_api_key() -> None:
    serving = {
        n
        for n in compose.services()
        if compose.runs_engram(n) and compose.command(n)[:1] == ["serve"]
    }
    assert serving == {"engram", "api-1", "api-2", "engram-turso"}
    for name in serving:
        key = compose.services()[name]["environment"]["ENGRAM_BOOTSTRAP_KEY"]
        # `${VAR:?message}`: compose refuses to start while ENGRAM_API_KEY is unset or
        # empty, instead of handing the service an empty key.
        assert re.fullmatch(r"\$\{ENGRAM_API_KEY:\?[^}]*32\+ characters[^}]*\}", key), key
        for env in ({}, {"ENGRAM_API_KEY": ""}):
            with pytest.raises(Unset, match=r"32\+ characters"):
                compose.environment(name, env)
        settings = compose.settings_of(compose.environment(name))
        assert settings.bootstrap_key is not None
        assert settings.bootstrap_key.get_secret_value() == API_KEY


def test_postgres_replicas_share_one_database_and_leave_learning_to_one_worker() -> None:
    services = compose.services()
    engram = {n for n in compose.in_profile("postgres") if compose.runs_engram(n)}
    by_command: dict[str, set[str]] = {}
    for name in engram:
        by_command.setdefault(compose.command(name)[0], set()).add(name)
    assert by_command == {"serve": {"api-1", "api-2"}, "worker": {"worker"}, "migrate": {"migrate"}}
    urls = set()
    for name in engram:
        settings = compose.settings_of(compose.environment(name))
        urls.add(settings.database_url)
        # LevelDB admits one process per directory, and each container would have its own.
        assert settings.blob_store == "sql", name
        if name in by_command["serve"]:
            assert not settings.learning.worker, name
        if name != "migrate":
            # Migrated once, by `migrate`, before they start.
            assert not settings.migrate_on_start, name
            assert services[name]["depends_on"] == {
                "migrate": {"condition": "service_completed_successfully"}
            }
    (url,) = urls
    assert kind_for(compose.settings_of({"ENGRAM_DATABASE_URL": url})).name == "postgresql"
    assert make_url(url).host == "postgres"
    migrate = services["migrate"]
    assert migrate.get("restart", "no") == "no"  # a one-shot: restarted, it would run again
    assert migrate["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])


@pytest.mark.parametrize("password", [None, "s3cret-Pass_word"])
def test_the_postgres_password_comes_from_one_variable(password: str | None) -> None:
    env = {"ENGRAM_API_KEY": API_KEY}
    if password is not None:
        env["ENGRAM_POSTGRES_PASSWORD"] = password
    given = compose.environment("postgres", env)["POSTGRES_PASSWORD"]
    assert given == (password or "engram")  # the default, for one machine only
    for name in compose.in_profile("postgres"):
        if compose.runs_engram(name):
            url = compose.environment(name, env)["ENGRAM_DATABASE_URL"]
            assert make_url(url).password == given, name
    assert "ports" not in compose.services()["postgres"]  # reached only by the services


def test_the_proxy_balances_both_replicas_and_passes_the_host_on() -> None:
    services = compose.services()
    (proxy,) = [n for n, s in services.items() if str(s.get("image", "")).startswith("caddy:")]
    replicas = {"api-1", "api-2"}
    site, upstreams, block = compose.caddy_upstreams((ROOT / "docker" / "Caddyfile").read_text())
    ports = {compose.settings_of(compose.environment(n)).port for n in replicas}
    assert sorted(upstreams) == sorted(f"{n}:{port}" for n in replicas for port in ports)
    assert block["health_uri"] == ["/health"]
    assert "./docker/Caddyfile:/etc/caddy/Caddyfile:ro" in services[proxy]["volumes"]
    # Published on the port the site listens on, and only once both replicas are healthy.
    assert [p.rsplit(":", 1)[1] for p in services[proxy]["ports"]] == [site.rsplit(":", 1)[1]]
    assert services[proxy]["depends_on"] == {n: {"condition": "service_healthy"} for n in replicas}
    # The client's Host reaches Engram as it was sent (no header_up rewrites it): Engram
    # judges the name the client used.
    assert not any(key.startswith("header_up") for key in block)
    (check_host,) = block["health_headers.Host"]
    for extra in ("", "engram.example.com"):
        for name in replicas:
            env = {"ENGRAM_API_KEY": API_KEY, "ENGRAM_ALLOWED_HOSTS": extra}
            settings = compose.settings_of(compose.environment(name, env))
            hosts = HostPatterns(settings.trusted_hosts)
            # From this machine, from the other containers, the proxy's own checks.
            for host in ("localhost", "127.0.0.1", proxy, check_host, extra or proxy):
                assert hosts.allows(host.encode()), (name, host)
            assert not hosts.allows(b"evil.example")


def test_the_turso_profile_reaches_its_libsql_server() -> None:
    services = compose.services()
    (server,) = [
        n
        for n, s in services.items()
        if str(s.get("image", "")).startswith("ghcr.io/tursodatabase/libsql-server:")
    ]
    (engram,) = [n for n in compose.in_profile("turso") if compose.runs_engram(n)]
    settings = compose.settings_of(compose.environment(engram))
    assert kind_for(settings) is LibSQLBackend
    # Plain HTTP to the server's HTTP port in the compose network.
    assert server_url(settings.database_url) == f"http://{server}:8080"
    assert settings.blob_store == "sql"
    assert HostPatterns(settings.trusted_hosts).allows(engram.encode())
    assert services[engram]["depends_on"] == {server: {"condition": "service_healthy"}}
    assert any(v.endswith(":/var/lib/sqld") for v in services[server]["volumes"])


@pytest.mark.parametrize(("status", "healthy"), [(200, True), (503, False)])
def test_the_libsql_servers_healthcheck_reads_the_health_status(status: int, healthy: bool) -> None:
    """The sqld service's healthcheck (the image has bash, no curl), as compose hands it
    to the container, against a server on a free port that answers /health with `status`."""

    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status if self.path == "/health" else 404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        test = compose.services()["sqld"]["healthcheck"]["test"]
        assert test[0] == "CMD"
        argv = [compose.interpolate(arg, {}) for arg in test[1:]]
        assert any("/dev/tcp/127.0.0.1/8080" in arg for arg in argv)
        port = server.server_address[1]
        argv = [arg.replace("127.0.0.1/8080", f"127.0.0.1/{port}") for arg in argv]
        r = subprocess.run(argv, capture_output=True, timeout=10)
        assert (r.returncode == 0) is healthy, r.stderr
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "value", [None, "true", "1", "yes", "false", "False", "0", "no", "off", "f", "n"]
)
def test_the_entrypoint_leaves_migrations_to_another_process_when_told(
    tmp_path: Path, value: str | None
) -> None:
    """docker/entrypoint.sh with a stand-in `engram` that records its calls: `serve`
    migrates first exactly when Engram's settings read ENGRAM_MIGRATE_ON_START as true."""
    log = tmp_path / "calls"
    fake = tmp_path / "engram"
    fake.write_text('#!/bin/sh\necho "$* ${ENGRAM_MIGRATE_ON_START-unset}" >> "$ENGRAM_FAKE_LOG"\n')
    fake.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "ENGRAM_FAKE_LOG": str(log)}
    if value is not None:
        env["ENGRAM_MIGRATE_ON_START"] = value
    r = subprocess.run(
        ["sh", str(compose.ENTRYPOINT), "serve", "--port", "9"],
        env=env,
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert r.returncode == 0, r.stderr
    migrates = compose.settings_of({} if value is None else {"ENGRAM_MIGRATE_ON_START": value})
    expected = [f"migrate --wait 30 {value or 'unset'}"] if migrates.migrate_on_start else []
    assert log.read_text().splitlines() == [*expected, "serve --port 9 false"]


def test_the_wheel_holds_every_file_the_code_reads(tmp_path: Path) -> None:
    """The image installs the wheel, not the tree: the dashboard's templates and scripts,
    the signature rules and the migration template must be in it, and the Python client
    from client/ (the CLI's client commands use it). Built from a copy of the
    repository's files, so that no build left in the tree (egg-info) stands in for the
    configuration."""
    import shutil
    import sys
    import zipfile

    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    source = tmp_path / "src"
    for name in listed:
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = tmp_path.glob("engram-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    wanted = {
        name
        for name in listed
        if name.startswith(("app/", "migrations/")) and not name.endswith((".py", ".pyc"))
    }
    assert wanted
    assert wanted - names == set()
    client = {n.removeprefix("client/") for n in listed if n.startswith("client/engram_client/")}
    assert "engram_client/__init__.py" in client
    assert client - names == set()


def test_the_replicas_behind_the_proxy_trust_its_address_and_only_it() -> None:
    """Each client its own rate limit, and https seen through Caddy: the replicas believe
    X-Forwarded-* from the proxy's fixed address on compose's fixed subnet, from no one else."""
    subnet = ipaddress.ip_network(
        compose.load()["networks"]["default"]["ipam"]["config"][0]["subnet"]
    )
    proxy = compose.services()["proxy"]["networks"]["default"]["ipv4_address"]
    assert ipaddress.ip_address(proxy) in subnet
    for name in ("api-1", "api-2"):
        settings = compose.settings_of(compose.environment(name))
        assert settings.trusted_proxies == [proxy], name
    assert compose.settings_of(compose.environment("engram")).trusted_proxies == []
