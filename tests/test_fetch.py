"""A spec by URL (fetch.py): https://, or http:// to a loopback host only, redirects under the
same rules, size and time limits; fetched specs' network $refs are not fetched. A real HTTP
server on 127.0.0.1 plays the spec's host."""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcpmint.cli import app
from mcpmint.load.fetch import FetchError, as_url, check_url, fetch

SPEC = b"""openapi: "3.0.3"
info: {title: Lending Library API, version: "1"}
servers: [{url: "https://library.example.com"}]
paths:
  /loans:
    get:
      operationId: listLoans
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {$ref: "http://127.0.0.1:1/elsewhere.yaml#/Loan"}
"""

runner = CliRunner()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        if self.path == "/specs/lending.yaml":
            self.send_response(200)
            self.send_header("Content-Type", "application/yaml")
            self.send_header("Content-Length", str(len(SPEC)))
            self.end_headers()
            self.wfile.write(SPEC)
        elif self.path == "/moved":
            self.send_response(302)
            self.send_header(
                "Location", f"http://127.0.0.1:{self.server.server_port}/specs/lending.yaml"
            )
            self.end_headers()
        elif self.path == "/away":
            self.send_response(302)
            self.send_header("Location", "http://example.com/openapi.yaml")
            self.end_headers()
        elif self.path == "/slow":
            self.send_response(200)
            self.end_headers()
            for _ in range(20):
                self.wfile.write(b"# more\n" * 10)
                self.wfile.flush()
                time.sleep(0.1)
        else:
            self.send_response(404)
            self.end_headers()


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_only_https_or_loopback_http_is_fetched() -> None:
    check_url("https://api.example.com/openapi.json")
    for loopback in ("http://127.0.0.1:8000/o.yaml", "http://localhost/o.yaml", "http://[::1]/"):
        check_url(loopback)
    for refused in ("http://example.com/o.yaml", "http://10.0.0.1/o.yaml", "ftp://x/o.yaml"):
        with pytest.raises(FetchError):
            check_url(refused)
    assert as_url(str(Path("https://api.example.com/v1/openapi.json"))) == (
        "https://api.example.com/v1/openapi.json"
    )
    assert as_url("specs/openapi.yaml") is None


def test_generate_from_a_url_keeps_the_spec_beside_the_output(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["generate", f"{server}/specs/lending.yaml", "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    assert (out / "lending.yaml").read_bytes() == SPEC
    assert "spec: lending.yaml" in (out / "mcpmint.yaml").read_text()
    # The spec's own network $ref is not followed: a warning, as from a file.
    assert "network $ref not fetched" in result.output
    # A redirect within the rules is followed; validate keeps nothing.
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    result = runner.invoke(app, ["validate", f"{server}/moved"])
    assert result.exit_code == 0, result.output
    assert "ok, 1 tools" in result.output and "mcpmint-fetched-" in result.output
    assert list(scratch.iterdir()) == []


def test_refusals_and_limits_are_located_errors(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = runner.invoke(app, ["validate", "http://example.com/openapi.yaml"])
    assert result.exit_code == 2
    assert "plain http:// is allowed only to a loopback host" in result.output
    # A redirect to a place the rules refuse is not followed.
    with pytest.raises(FetchError, match="only to a loopback host"):
        fetch(f"{server}/away")
    monkeypatch.setenv("MCPMINT_FETCH_MAX_BYTES", "100")
    with pytest.raises(FetchError, match="larger than 100 bytes"):
        fetch(f"{server}/specs/lending.yaml")
    monkeypatch.setenv("MCPMINT_FETCH_MAX_BYTES", "1000000")
    monkeypatch.setenv("MCPMINT_FETCH_TIMEOUT", "0.5")
    with pytest.raises(FetchError, match=r"no complete answer within 0\.5 s"):
        fetch(f"{server}/slow")
    result = runner.invoke(app, ["validate", f"{server}/missing.yaml"])
    assert result.exit_code == 2 and "HTTP 404" in result.output
    assert not list(tmp_path.iterdir())


def test_init_fetches_the_spec_into_the_new_project(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPMINT_TEMPLATE_REPO", str(tmp_path / "template-repo"))
    project = tmp_path / "server"
    result = runner.invoke(
        app, ["init", str(project), "--spec", f"{server}/specs/lending.yaml", "--defaults"]
    )
    assert result.exit_code == 0, result.output
    assert (project / "lending.yaml").read_bytes() == SPEC
    assert "spec: lending.yaml" in (project / ".copier-answers.yml").read_text()
    assert "namespace: lending" in (project / "mcpmint.yaml").read_text()
