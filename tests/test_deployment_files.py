"""The deployment files a generated package is given (Dockerfile, deploy/compose.yaml,
deploy/nginx.conf, deploy/kubernetes.yaml): user-owned, and linted here as far as a machine
without a container engine allows: hadolint on the Dockerfile, checkov on the Dockerfile and
the Kubernetes manifests (slow: a virtual environment of its own), nginx's own `-t` on the load
balancer's configuration, and the topology they describe read back. The same topology runs
with real processes in tests/test_replicas.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import GenerateOptions, generate

from .support import PLUS, make_venv

FILES = ("Dockerfile", ".dockerignore", "deploy/compose.yaml", "deploy/nginx.conf",
         "deploy/kubernetes.yaml")  # fmt: skip


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("deploy") / "petstore-mcp"
    sink = DiagnosticSink()
    generate(PLUS, GenerateOptions(output=out), sink)
    assert not sink.has_errors, [d.render() for d in sink]
    return out


def test_the_deployment_files_are_scaffolded_once_and_then_the_users(tmp_path: Path) -> None:
    package = generated(tmp_path)
    for name in FILES:
        (package / name).write_text("# mine\n", encoding="utf-8")
    sink = DiagnosticSink()
    generate(PLUS, GenerateOptions(output=package), sink)
    assert not sink.has_errors
    assert all((package / name).read_text(encoding="utf-8") == "# mine\n" for name in FILES)


def test_hadolint_finds_nothing_in_the_dockerfile(package: Path) -> None:
    out = package
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or "hadolint"
    done = subprocess.run([hadolint, str(out / "Dockerfile")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    text = (out / "Dockerfile").read_text(encoding="utf-8")
    assert "USER 10001" in text and "python:3.12-slim" in text
    assert "pip install --no-cache-dir --no-index /wheels/*.whl" in text  # its own wheel
    assert '"python", "-m", "petstore_mcp", "--transport", "http"' in text


def test_nginx_accepts_the_load_balancers_configuration(package: Path, tmp_path: Path) -> None:
    out = package
    # The compose file's service name, resolved here to loopback for the syntax check.
    conf = (out / "deploy" / "nginx.conf").read_text(encoding="utf-8")
    conf = conf.replace("server server:8000;", "server 127.0.0.1:8000;")
    (tmp_path / "default.conf").write_text(conf, encoding="utf-8")
    main = tmp_path / "nginx.conf"
    main.write_text(
        f"pid {tmp_path}/nginx.pid; error_log stderr; events {{}}\n"
        f"http {{ include {tmp_path}/default.conf; }}\n",
        encoding="utf-8",
    )
    nginx = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")
    assert nginx, "nginx is missing: run scripts/test, which installs it"
    done = subprocess.run([nginx, "-t", "-c", str(main), "-p", str(tmp_path)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "ip_hash;" in conf and "proxy_next_upstream error timeout;" in conf


def test_compose_runs_three_replicas_on_one_redis_behind_nginx(package: Path) -> None:
    compose = yaml.safe_load((package / "deploy" / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"server", "redis", "nginx"}
    server = services["server"]
    assert server["deploy"]["replicas"] == 3
    assert server["environment"]["PETSTORE_STATE_STORE"] == "redis://redis:6379/0"
    assert server["environment"]["PETSTORE_STATE_KEY"].startswith("${PETSTORE_STATE_KEY:?")
    assert services["nginx"]["ports"] == ["127.0.0.1:8080:8080"]  # loopback only


def test_kubernetes_has_replicas_a_service_a_secret_and_probes(package: Path) -> None:
    needed_server = ("Deployment", "petstore-mcp")
    text = (package / "deploy" / "kubernetes.yaml").read_text(encoding="utf-8")
    documents: list[dict[str, Any]] = list(yaml.safe_load_all(text))
    kinds = {(d["kind"], d["metadata"]["name"]) for d in documents}
    needed = {
        ("Secret", "petstore-mcp"),
        ("Service", "petstore-mcp"),
        ("Deployment", "petstore-mcp"),
        ("Deployment", "petstore-mcp-redis"),
    }
    assert needed <= kinds
    server = next(d for d in documents if (d["kind"], d["metadata"]["name"]) == needed_server)
    assert server["spec"]["replicas"] == 3
    [container] = server["spec"]["template"]["spec"]["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    [secret] = [d for d in documents if d["kind"] == "Secret"]
    assert "PETSTORE_STATE_KEY" in secret["stringData"]


@pytest.mark.slow
def test_checkov_passes_the_dockerfile_and_the_kubernetes_manifests(
    package: Path, tmp_path: Path
) -> None:
    out = package
    python = make_venv(tmp_path / "venv", "checkov>=3.2,<4")
    checkov = python.parent / "checkov"
    for framework, target in (("dockerfile", "Dockerfile"), ("kubernetes", "deploy")):
        done = subprocess.run(
            [str(checkov), "--framework", framework, "-d" if target == "deploy" else "-f",
             str(out / target), "--compact", "--quiet", "--skip-download"],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-4000:]
        assert "Passed checks" in done.stdout and "Failed checks: 0" in done.stdout


def generated(folder: Path) -> Path:
    out = folder / "petstore-mcp"
    sink = DiagnosticSink()
    generate(PLUS, GenerateOptions(output=out), sink)
    assert not sink.has_errors
    return out
