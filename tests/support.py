"""Helpers for end-to-end tests: free ports, Prism, fresh virtual environments, a recording
loopback HTTP server, and a user who confirms every question."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client import ClientRequestContext

from mcpmint.config import load_config
from mcpmint.diagnostics import Aborted, DiagnosticSink
from mcpmint.pipeline import build_config

REPO = Path(__file__).resolve().parents[1]
NODE_BIN = REPO / ".tools" / "node_modules" / ".bin"
PLUS = REPO / "specs" / "petstore-plus.yaml"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before listening")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on port {port} after {timeout} s")


def node_tool(name: str) -> Path:
    path = NODE_BIN / name
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run scripts/test, which installs it")
    return path


def stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate, and kill if it does not go within 10 s."""
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


# What generated code must pass, as it must for hand-written code: run in a package's folder.
BAR_COMMANDS = [
    ["-m", "ruff", "check", "--no-cache", "."],
    ["-m", "ruff", "format", "--check", "--no-cache", "."],
    ["-m", "mypy", "--strict", "--no-incremental", "--cache-dir=/dev/null", "src", "tests"],
]
BAR_IDS = ["ruff-check", "ruff-format", "mypy-strict"]


@contextmanager
def prism(spec: Path) -> Iterator[str]:
    """A Prism mock of `spec` on a free loopback port; yields its base URL."""
    port = free_port()
    # The log goes beside nothing of ours: a temporary file, kept only while Prism runs.
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [str(node_tool("prism")), "mock", "-h", "127.0.0.1", "-p", str(port), str(spec)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port, process, timeout=120)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)
        log.close()


@contextmanager
def serving(command: list[str], port: int, env: dict[str, str]) -> Iterator[None]:
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(port, process)
        yield
    finally:
        stop(process)
        if process.stderr:
            process.stderr.close()


def make_venv(folder: Path, *requirements: str) -> Path:
    """A fresh virtual environment with `requirements` installed; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python"
    if requirements:
        subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                *requirements,
            ],
            check=True,
            capture_output=True,
        )
    return python


def run(
    command: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def generate_spec_text(folder: Path, spec: str) -> tuple[Path, str]:
    """`mcpmint generate spec.yaml -o out` in `folder` (a subprocess, clean environment), with
    `spec` written to `folder/spec.yaml`; the output folder and what it printed."""
    (folder / "spec.yaml").write_text(spec, encoding="utf-8")
    out = folder / "out"
    done = run(
        [sys.executable, "-m", "mcpmint", "generate", "spec.yaml", "-o", str(out)],
        cwd=folder,
        env=clean_env(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out, done.stdout + done.stderr


def mcpmint(*args: str, cwd: Path = REPO) -> tuple[int, str, str]:
    """`python -m mcpmint *args` in `cwd`: (exit code, stdout, stderr)."""
    done = run([sys.executable, "-m", "mcpmint", *args], cwd=cwd, env=clean_env())
    return done.returncode, done.stdout, done.stderr


def package_tests(folder: Path) -> subprocess.CompletedProcess[str]:
    """A generated package's own tests (`folder/tests`), run against its `src`."""
    return run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=folder,
        env=clean_env(PYTHONPATH=str(folder / "src")),
    )


def generate_plus_project(folder: Path, config: str) -> None:
    """petstore-plus copied into `folder` with `config` as its mcpmint.yaml, generated there."""
    shutil.copy(PLUS, folder / "petstore-plus.yaml")
    (folder / "mcpmint.yaml").write_text(config, encoding="utf-8")
    done = run(
        [sys.executable, "-m", "mcpmint", "generate", "mcpmint.yaml"], cwd=folder, env=clean_env()
    )
    assert done.returncode == 0, done.stdout + done.stderr


def trees_by_hash_seed(spec: Path, out: Path) -> list[dict[str, str]]:
    """What `mcpmint generate spec` writes under two PYTHONHASHSEEDs (into folders below
    `out`), each as {path: sha256}: R5 wants them identical."""
    trees = []
    for seed in ("1", "4242"):
        folder = out / f"seed-{seed}"
        command = [sys.executable, "-m", "mcpmint", "generate", str(spec), "-o", str(folder)]
        done = run(command, env=clean_env(PYTHONHASHSEED=seed))
        assert done.returncode == 0, done.stderr
        trees.append(
            {
                p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(folder.rglob("*"))
                if p.is_file()
            }
        )
    return trees


# A git identity and no user config, for commits in a test's repository.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def clean_env(**extra: str) -> dict[str, str]:
    """The current environment without Python path tweaks, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(extra)
    return env


def which(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} is not on PATH")
    return found


# ------------------------------------------------------------------------------ loopback servers


@dataclass
class Seen:
    """One request a loopback server received (header names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def everything(self) -> str:
        return f"{self.method} {self.path} {self.headers} {self.body!r}"


@dataclass
class Loopback:
    url: str
    seen: list[Seen] = field(default_factory=list)

    @property
    def requests(self) -> list[str]:
        """ "METHOD /path?query" of each request, in order."""
        return [f"{seen.method} {seen.path}" for seen in self.seen]


@contextmanager
def loopback(answer: Callable[[Seen], tuple[int, Any]]) -> Iterator[Loopback]:
    """A threaded HTTP server on 127.0.0.1 that records every request; `answer(seen)` gives
    (status, JSON value) for it, or (status, None) for an answer without a body."""
    state = Loopback("")

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            seen = Seen(
                self.command,
                self.path,
                {k.lower(): v for k, v in self.headers.items()},
                self.rfile.read(length),
            )
            state.seen.append(seen)
            status, data = answer(seen)
            self.send_response(status)
            if data is None:
                self.end_headers()
                return
            body = json.dumps(data).encode()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        def log_message(self, format: str, *args: Any) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


class User:
    """An elicitation callback: confirms every question and remembers them (the first line
    names the tool)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})


# ------------------------------------------------------------------------------ mcpmint.yaml


def write_config(folder: Path, body: str, spec: Path = PLUS) -> Path:
    """`folder/mcpmint.yaml`: one source, `spec`, then `body` (more top-level keys)."""
    path = folder / "mcpmint.yaml"
    path.write_text(f"sources:\n  - spec: {json.dumps(str(spec))}\n{body}", encoding="utf-8")
    return path


def errors_of(folder: Path, body: str) -> list[str]:
    """The errors of the config `body` (see `write_config`), rendered; building must stop."""
    sink = DiagnosticSink()
    config = load_config(write_config(folder, body), sink)
    if config is not None:
        with pytest.raises(Aborted):
            build_config(config, sink)
    return [d.render() for d in sink.errors]


def in_a_child(compute: Callable[[], Any], timeout: float = 60.0) -> Any:
    """`compute()`'s value, computed in a forked child that is killed after `timeout` seconds.

    For code that may never return and never lets go of the GIL (a backtracking regular
    expression): a thread could not be abandoned, a child can. A liveness bound for checks
    that take microseconds, not a speed measurement. The value must pickle."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=lambda: sender.send(compute()), daemon=True)
    child.start()
    try:
        if not receiver.poll(timeout):
            pytest.fail(f"did not finish within {timeout:.0f} s")
        return receiver.recv()
    finally:
        child.kill()
        child.join()
