"""Generated servers side by side at run time: mcpmint, openapi-mcp-generator and FastMCP.

For one spec, each server is started over stdio by the same client (`peer_driver.py measure`):

- start-up: from spawning the process to the answer of the first `tools/list` (imports, spec
  or catalogue loading, the MCP handshake); peak RSS of the server process over the whole run
  (`/usr/bin/time -f %M`);
- the `tools/list` it actually sends, in bytes and estimated tokens (bytes / 4);
- per-call overhead: the median of N calls of one read-only tool through the server against a
  loopback upstream, minus the median of N direct `httpx2` GETs of the same URL from the same
  client process.

Peers: mcpmint's generated package (run from its tree with this repo's `.venv` python);
openapi-mcp-generator's generated TypeScript project, compiled with `tsc --noCheck` against one
shared `npm install` of its dependencies in `.tools/peer-runtime/`, run with Node; FastMCP's
`from_openapi` (`fastmcp==4.1.6`, installed by this script into `.tools/fastmcp-venv/`), which
builds its server from the spec at start-up (given as JSON, converted before timing).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / ".tools"
DRIVER = Path(__file__).with_name("peer_driver.py")
FASTMCP = "fastmcp==4.1.6"
FASTMCP_VENV = TOOLS / "fastmcp-venv"
PEER_RUNTIME = TOOLS / "peer-runtime"
CALLS = 300
BASE_PATH = "/api"
# One read-only operation per spec, called through every server: operationId, request path,
# arguments, and an upstream answer valid against the operation's response schema (servers that
# check results against output schemas must not fail the call).
OPERATIONS: dict[str, tuple[str, str, dict[str, Any], Any]] = {
    "petstore-plus": ("getPet", "/pets/1", {"petId": 1}, {"id": 1, "name": "Rex"}),
    "stripe": (
        "GetCustomersCustomer",
        "/v1/customers/cus_1",
        {"customer": "cus_1"},
        {"deleted": True, "id": "cus_1", "object": "customer"},
    ),
    "github": ("emojis/get", "/emojis", {}, {"+1": "https://github.githubassets.com/1f44d.png"}),
}


def install_fastmcp() -> Path | None:
    """FastMCP in its own virtual environment (never in mcpmint's test dependencies)."""
    python = FASTMCP_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(FASTMCP_VENV)], check=True)
    ok = subprocess.run(
        [str(python), "-c", "import fastmcp"], capture_output=True, check=False
    ).returncode
    if ok != 0:
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", FASTMCP],
            capture_output=True,
            check=False,
        )
    return python if (FASTMCP_VENV / "bin" / "fastmcp").exists() else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def loopback_upstream(body: Any) -> Iterator[str]:
    """The API every server calls: answers 200 with `body` as JSON; yields its base URL."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(DRIVER), "upstream", str(port), json.dumps(body)]
    )
    try:
        for _ in range(100):
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}{BASE_PATH}"
    finally:
        process.terminate()
        process.wait(10)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(extra)
    return env


def measure(
    command: list[str], env: dict[str, str], spec_name: str, base_url: str, work: Path
) -> dict[str, Any]:
    """Run `peer_driver.py measure` on one server command; adds `peak_mb` of the server."""
    operation, path, arguments, _ = OPERATIONS[spec_name]
    rss = work / "rss.txt"
    rss.unlink(missing_ok=True)
    config = {
        "command": ["/usr/bin/time", "-f", "%M", "-o", str(rss), *command],
        "env": env,
        "operation": operation,
        "arguments": arguments,
        "direct_url": base_url + path,
        "calls": CALLS,
    }
    config_file = work / "measure.json"
    config_file.write_text(json.dumps(config))
    try:
        done = subprocess.run(
            [sys.executable, str(DRIVER), "measure", str(config_file)],
            capture_output=True,
            text=True,
            check=False,
            timeout=900,
        )
    except subprocess.TimeoutExpired:
        return {"error": "timed out after 900 s"}
    if done.returncode != 0 or not done.stdout.strip():
        return {"error": (done.stderr or done.stdout)[-300:]}
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    for _ in range(50):  # /usr/bin/time writes when the server has exited
        if rss.exists() and rss.read_text().strip():
            break
        time.sleep(0.1)
    text = rss.read_text().strip().splitlines() if rss.exists() else []
    row["peak_mb"] = round(int(text[-1]) / 1024) if text and text[-1].isdigit() else None
    return row


def mcpmint_server(out: Path, spec_name: str, base_url: str, work: Path) -> dict[str, Any]:
    catalog_file = next(out.glob("src/*/_generated/tools.json"), None)
    if catalog_file is None:
        return {"error": "no generated package"}
    catalog = json.loads(catalog_file.read_text())
    package = catalog_file.parent.parent.name
    prefix = catalog["server"]["envPrefix"]
    env = _env(PYTHONPATH=str(out / "src"))
    env[f"{prefix}_BASE_URL"] = base_url
    env[f"{prefix}_AUDIT"] = "off"
    for scheme in catalog.get("securitySchemes", {}).values():
        for role, variable in scheme.get("env", {}).items():
            if role in ("value", "token", "username", "password"):
                env[variable] = "bench-secret"
    return measure([sys.executable, "-m", package], env, spec_name, base_url, work)


def fastmcp_server(
    python: Path, spec: Path, spec_name: str, base_url: str, work: Path
) -> dict[str, Any]:
    as_json = work / "spec.json"
    if not as_json.exists():
        with spec.open(encoding="utf-8") as file:
            data = json.load(file) if spec.suffix == ".json" else yaml.load(file, yaml.CSafeLoader)
        as_json.write_text(json.dumps(data))
    command = [str(python), str(DRIVER), "fastmcp", str(as_json), base_url]
    return measure(command, _env(), spec_name, base_url, work)


def build_peer(project: Path) -> str:
    """Compile openapi-mcp-generator's project; '' when done, else why not."""
    PEER_RUNTIME.mkdir(parents=True, exist_ok=True)
    if not (PEER_RUNTIME / "node_modules" / ".bin" / "tsc").exists():
        # Its package.json is the same for every spec: install its dependencies once.
        shutil.copy(project / "package.json", PEER_RUNTIME / "package.json")
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=PEER_RUNTIME,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            return "npm install failed: " + done.stderr[-200:]
    link = project / "node_modules"
    if not link.exists():
        link.symlink_to(PEER_RUNTIME / "node_modules")
    try:
        done = subprocess.run(
            [str(PEER_RUNTIME / "node_modules" / ".bin" / "tsc"), "--noCheck"],
            cwd=project,
            capture_output=True,
            text=True,
            check=False,
            timeout=900,
        )
    except subprocess.TimeoutExpired:
        return "tsc timed out after 900 s"
    if not (project / "build" / "index.js").exists():
        return "tsc failed: " + (done.stdout + done.stderr)[-200:]
    return ""


def peer_server(
    project: Path, spec: Path, spec_name: str, base_url: str, work: Path
) -> dict[str, Any]:
    if not (project / "src" / "index.ts").exists():
        return {"error": "no generated project"}
    problem = build_peer(project)
    if problem:
        return {"error": problem}
    env = _env(API_BASE_URL=base_url)
    with spec.open(encoding="utf-8") as file:
        data = json.load(file) if spec.suffix == ".json" else yaml.load(file, yaml.CSafeLoader)
    schemes = (data.get("components") or {}).get("securitySchemes") or {}
    for name in schemes:
        key = "".join(c if c.isalnum() else "_" for c in name).upper()
        for variable in (
            "API_KEY",
            "BEARER_TOKEN",
            "OAUTH_TOKEN",
            "BASIC_USERNAME",
            "BASIC_PASSWORD",
        ):
            env[f"{variable}_{key}"] = "bench-secret"
    node = shutil.which("node") or "node"
    return measure([node, str(project / "build" / "index.js")], env, spec_name, base_url, work)


def server_rows(
    spec_name: str, spec: Path, work: Path, peer_name: str | None, fastmcp: Path | None
) -> list[dict[str, Any]]:
    """One row per server for `spec`; `work` holds `mcpmint-out` and `peer-out` from run.py."""
    rows = []
    with loopback_upstream(OPERATIONS[spec_name][3]) as base_url:
        rows.append(
            {
                "spec": spec_name,
                "tool": "mcpmint",
                **mcpmint_server(work / "mcpmint-out", spec_name, base_url, work),
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr)
        if peer_name is not None:
            rows.append(
                {
                    "spec": spec_name,
                    "tool": peer_name,
                    **peer_server(work / "peer-out", spec, spec_name, base_url, work),
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr)
        if fastmcp is not None:
            rows.append(
                {
                    "spec": spec_name,
                    "tool": FASTMCP,
                    **fastmcp_server(fastmcp, spec, spec_name, base_url, work),
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def server_table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| spec | server | tools | tools/list bytes | ~tokens | start-up to tools/list s "
        "| server peak MB | call ms (median) | direct ms | overhead ms |"
    )
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['spec']} | {r['tool']} | failed: {r['error'][:100]!r} ||||||||")
            continue
        call = r.get("call_ms", "n/a")
        note = f" ({r['error_results']} error results)" if r.get("error_results") else ""
        lines.append(
            f"| {r['spec']} | {r['tool']} | {r['tools']} | {r['bytes']:,} | {r['bytes'] // 4:,} "
            f"| {r['startup_s']} | {r['peak_mb']} | {call}{note} | {r.get('direct_ms', 'n/a')} "
            f"| {r.get('overhead_ms', 'n/a')} |"
        )
    return "\n".join(lines)
