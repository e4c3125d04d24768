"""What `mcpmint generate` prints after a run that wrote a server: the next steps.

From the package as written (its folder, and the `tools.json` document the run wrote into
it), so the block names what was written: the install command, the variables to set, how to
run it, the `mcpServers` entry MCP clients (Claude Desktop, VS Code, Cursor) read, and the
Inspector.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

INSPECTOR = "npx @modelcontextprotocol/inspector"


def _package(output: Path) -> str | None:
    """The import package under `output`/src (None: not found)."""
    for tools in sorted(output.glob("src/*/_generated/tools.json")):
        return tools.parent.parent.name
    return None


def _variables(document: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(variable, what to put there): the base URL when the spec has none, then one
    credential of each security scheme."""
    server = document.get("server") or {}
    prefix = str(server.get("envPrefix") or "")
    wanted: list[tuple[str, str]] = []
    if not (document.get("upstream") or {}).get("baseUrl"):
        wanted.append((f"{prefix}_BASE_URL", "https://the-api.example.com"))
    for name, scheme in sorted((document.get("securitySchemes") or {}).items()):
        env = scheme.get("env") if isinstance(scheme, dict) else None
        if not isinstance(env, dict):
            continue
        # An OAuth2 scheme takes a token, or a client id and secret: the token is shown.
        variable = env.get("token") or env.get("value") or next(iter(env.values()), None)
        if isinstance(variable, str):
            wanted.append((variable, f"<{name} credential>"))
    return wanted


def _install_path(output: Path) -> str:
    text = output.as_posix()
    if text == ".":
        return "."
    if not output.is_absolute() and not text.startswith("."):
        text = "./" + text  # pip reads a bare name as a package on an index
    return text


def next_steps(output: Path, document: Mapping[str, Any]) -> str | None:
    """The block, or None when `output` holds no generated package. `document`: the
    package's `tools.json` document (its tools are not needed)."""
    package = _package(output)
    if package is None:
        return None
    name = str((document.get("server") or {}).get("name") or package.replace("_", "-"))
    variables = _variables(document)
    python = sys.executable
    run = f"python -m {package}"
    lines = [
        "",
        "Next steps:",
        f"  python -m pip install -e {shlex.quote(_install_path(output) + '[test]')}"
        "    # editable: regenerating needs no reinstall",
    ]
    if variables:
        credentials = (
            " (security schemes: set the ones your calls need)"
            if any(not v.endswith("_BASE_URL") for v, _ in variables)
            else ""
        )
        lines.append(f"  # settings are environment variables, all in REFERENCE.md{credentials}:")
        lines += [f"  export {v}={shlex.quote(value)}" for v, value in variables]
    lines += [
        f"  {run}                        # stdio",
        f"  {run} --transport http       # streamable HTTP on http://127.0.0.1:8000/mcp",
        f"  {INSPECTOR} {shlex.quote(python)} -m {package}"
        + "".join(f" -e {v}={shlex.quote(value)}" for v, value in variables),
        "MCP clients (Claude Desktop, VS Code, Cursor) start it from their mcpServers config",
        "(`command`: the python of the environment you installed it into):",
    ]
    entry: dict[str, Any] = {"command": python, "args": ["-m", package]}
    if variables:
        entry["env"] = dict(variables)
    snippet = json.dumps({"mcpServers": {name: entry}}, indent=2)
    # The arguments on one line, as the clients' own documentation writes them.
    spread = json.dumps(entry["args"], indent=2).replace("\n", "\n      ")
    snippet = snippet.replace(spread, json.dumps(entry["args"]), 1)
    lines += ["  " + line for line in snippet.splitlines()]
    return "\n".join(lines)
