"""Real services for the state-store and load-balancer tests: redis-server and nginx from the
Debian packages that scripts/test installs, each on a free loopback port, in a temporary
folder, stopped when the test ends."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .support import free_port, stop, wait_for_port


def _binary(name: str, *extra: str) -> str:
    for folder in ("", *extra):
        found = shutil.which(name) if not folder else shutil.which(name, path=folder)
        if found:
            return found
    raise RuntimeError(f"{name} is missing: run scripts/test, which installs it (Debian package)")


class Redis:
    """A redis-server without persistence on loopback; it can be stopped, restarted, paused."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._folder = folder
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [
            _binary("redis-server", "/usr/bin", "/usr/sbin"),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self._folder),
        ]  # fmt: skip
        self._process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_for_port(self.port, self._process, timeout=20)

    def stop(self) -> None:
        if self._process is not None:
            self.resume()
            stop(self._process)
            self._process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def pause(self) -> None:
        """SIGSTOP: the port stays open and nothing answers (a store that hangs)."""
        assert self._process is not None
        self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGCONT)

    def keys(self) -> list[str]:
        return self.cli("--scan").split()

    def cli(self, *args: str) -> str:
        command = [_binary("redis-cli", "/usr/bin"), "-p", str(self.port), *args]
        return subprocess.run(command, check=True, capture_output=True, text=True).stdout


@contextmanager
def redis_server() -> Iterator[Redis]:
    with tempfile.TemporaryDirectory(prefix="mcpmint-redis-") as folder:
        server = Redis(Path(folder))
        server.start()
        try:
            yield server
        finally:
            server.stop()


_NGINX = """
daemon off;
master_process on;
worker_processes 1;
{user}
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    upstream replicas {{
{balance}
{servers}
        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_read_timeout 60s;
            proxy_next_upstream error timeout;
        }}
    }}
}}
"""


@contextmanager
def nginx(ports: list[int], *, affinity: bool = False) -> Iterator[int]:
    """nginx on a free port, balancing over `ports` round robin, or by client address with
    `affinity` (`ip_hash`: every request of one client to one replica); yields its port."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="mcpmint-nginx-") as folder:
        servers = "\n".join(
            f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=5s;" for p in ports
        )
        # As root the workers would run as `nobody`, who cannot write this private folder.
        user = "user root;" if os.geteuid() == 0 else ""
        conf = Path(folder) / "nginx.conf"
        conf.write_text(
            _NGINX.format(
                folder=folder,
                servers=servers,
                port=port,
                user=user,
                balance="        ip_hash;" if affinity else "",
            ),
            encoding="utf-8",
        )
        log = Path(folder) / "error.log"
        command = [_binary("nginx", "/usr/sbin"), "-c", str(conf), "-p", folder]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for_port(port, process, timeout=20)
            yield port
        except BaseException:
            if log.exists():
                print(log.read_text(errors="replace")[-2000:])
            raise
        finally:
            process.send_signal(signal.SIGQUIT)  # graceful: workers finish, then exit
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
