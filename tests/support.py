"""Helpers for end-to-end tests: free ports, Prism, fresh virtual environments."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NODE_BIN = REPO / ".tools" / "node_modules" / ".bin"


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
