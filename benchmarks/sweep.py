"""The sweep: every entry point of ../shared/corpus/sweep/ and of the old corpus, generated.

    .venv/bin/python benchmarks/sweep.py [--only twilio,box] [--corpus sweep|old|all]
        [--folder DIR] [--jsonl rows.jsonl] [--write-docs] [--timeout 600]
        [--memory-mib 4096] [--generator FOLDER]

`--folder DIR` sweeps every JSON or YAML file under DIR instead (each file a whole spec),
for collections from outside the corpus.

For each entry of `../shared/corpus/sweep/SOURCES.tsv` (root: the provider's folder) and of
`../shared/corpus/INDEX.tsv` (root: the spec's own corpus folder), one after the other:
`python -m mcpmint generate ENTRY -o OUT --root ROOT` in a subprocess, as a user runs it,
with a wall-time limit and an address-space limit; the child's own peak resident memory comes
from `wait4`. Recorded per spec: exit code, internal error (the CLI's `internal error:` line
or a traceback), the operations in the spec (counted by this script's own reader, not by
mcpmint), the tools out, the warnings, time and peak memory.

Then the mechanical check "every tool carries its operation": this script reads the spec on
its own (`$ref`s followed across files, Swagger 2.0 and OpenAPI 3 alike), lists each
operation's parameters (name, in) and whether it has a body, and compares them with the
generated `tools.json` (`meta.source` names the operation; `request.parameters` and
`request.body` what the tool sends). An operation without a tool, a parameter without an
argument, or a body that is not sent is a finding, unless mcpmint's output names it in a
warning (`explained`); the headers an HTTP client owns (`Content-Length`, `Host`, ...) and
`Accept`/`Content-Type` (set from the spec's media types) are not expected as arguments.

`--write-docs` replaces the table between the sweep markers of docs/corpus.md.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "corpus"
SWEEP = SHARED / "sweep"
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
# Headers the HTTP client sets itself, that the spec's media types set, or that OpenAPI says
# a parameter may not describe (Accept, Content-Type, Authorization): never arguments.
OWNED_HEADERS = {
    "accept",
    "authorization",
    "accept-encoding",
    "connection",
    "content-length",
    "content-type",
    "host",
    "transfer-encoding",
    "user-agent",
    "expect",
    "te",
    "trailer",
    "upgrade",
}
DOCS_BEGIN = "<!-- sweep table: begin (written by benchmarks/sweep.py --write-docs) -->"
DOCS_END = "<!-- sweep table: end -->"


def shared_root() -> Path:
    """The shared corpus: ../shared/corpus from the main checkout or a worktree."""
    for candidate in (SHARED, Path("/work/shared/corpus")):
        if candidate.exists():
            return candidate
    return SHARED


def _int(text: str) -> int:
    return int(text) if text.strip().isdigit() else 0


def entries(which: str, folder: Path | None = None) -> list[dict[str, Any]]:
    if folder is not None:
        return folder_entries(folder)
    corpus = shared_root()
    found: list[dict[str, Any]] = []
    if which in ("sweep", "all"):
        with (corpus / "sweep" / "SOURCES.tsv").open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                entry = row["entry"]
                found.append(
                    {
                        "corpus": "sweep",
                        "name": entry,
                        "path": corpus / "sweep" / entry,
                        "root": corpus / "sweep" / entry.split("/")[0],
                        "version": row["spec_version"],
                        "listed_operations": _int(row["operations"]),
                    }
                )
    if which in ("old", "all"):
        with (corpus / "INDEX.tsv").open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                entry = row["entry_file"]
                found.append(
                    {
                        "corpus": "old",
                        "name": row["name"],
                        "path": corpus / entry,
                        "root": corpus / entry.split("/")[0] if "/" in entry else corpus,
                        "version": row["version"],
                        "listed_operations": _int(row["operations"]),
                    }
                )
    return found


def folder_entries(folder: Path) -> list[dict[str, Any]]:
    """Every JSON or YAML file under `folder` (a collection of bundled specs, one per file,
    such as APIs.guru's directory), each its own root."""
    found = []
    for path in sorted(folder.rglob("*")):
        if path.suffix.lower() in (".json", ".yaml", ".yml") and path.is_file():
            found.append(
                {
                    "corpus": "folder",
                    "name": path.relative_to(folder).as_posix(),
                    "path": path,
                    "root": path.parent,
                    "version": "",
                    "listed_operations": 0,
                }
            )
    return found


# --- this script's own reader of a spec (independent of mcpmint's loader) -------------------


class Reader:
    """Documents by file, `$ref`s followed relative to the referring file."""

    def __init__(self) -> None:
        self.files: dict[Path, Any] = {}

    def document(self, path: Path) -> Any:
        path = path.resolve()
        if path not in self.files:
            text = path.read_text(encoding="utf-8", errors="replace")
            if path.suffix.lower() == ".json":
                self.files[path] = json.loads(text)
            elif path.suffix.lower() in (".yaml", ".yml"):
                self.files[path] = yaml.load(
                    text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
                )
            else:
                self.files[path] = text
        return self.files[path]

    def follow(self, node: Any, where: Path, depth: int = 0) -> tuple[Any, Path]:
        """The node a `$ref` names (through chains of them), and the file it is in."""
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and depth < 50:
            depth += 1
            ref = node["$ref"]
            target, _, pointer = ref.partition("#")
            if target:
                where = (where.parent / target).resolve()
            try:
                node = self.document(where)
            except (OSError, ValueError, yaml.YAMLError):
                return None, where
            for part in [p for p in pointer.split("/") if p != ""]:
                part = part.replace("~1", "/").replace("~0", "~")
                if isinstance(node, dict):
                    node = node.get(part)
                elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                    node = node[int(part)]
                else:
                    return None, where
        return node, where


def operations(path: Path) -> Iterator[dict[str, Any]]:
    """Each operation of a spec: its pointer, parameters {(in, name)} and whether it has a body."""
    reader = Reader()
    top = reader.document(path)
    if not isinstance(top, dict):
        return
    paths, where = reader.follow(top.get("paths"), path)
    items: list[tuple[str, Any, Path]] = []
    if isinstance(paths, dict):
        items = [(key, value, where) for key, value in paths.items()]
    elif isinstance(paths, list):  # `paths` as a list of `$ref`s to files of path items
        for element in paths:
            chunk, chunk_where = reader.follow(element, where)
            if isinstance(chunk, dict):
                items += [(key, value, chunk_where) for key, value in chunk.items()]
    for key, raw, item_where in items:
        if not isinstance(key, str) or not key.startswith("/"):
            continue
        item, item_file = reader.follow(raw, item_where)
        if not isinstance(item, dict):
            continue
        shared = _parameters(reader, item.get("parameters"), item_file)
        for method in METHODS:
            if method not in item:
                continue
            op, op_file = reader.follow(item[method], item_file)
            if not isinstance(op, dict):
                continue
            params = dict(shared)
            params.update(_parameters(reader, op.get("parameters"), op_file))
            body = _carries(reader, op.get("requestBody"), op_file) or any(
                where in ("body", "formData") for where, _ in params
            )
            params = {k: v for k, v in params.items() if k[0] not in ("body", "formData")}
            pointer = "#/paths/" + key.replace("~", "~0").replace("/", "~1") + "/" + method
            yield {"pointer": pointer, "parameters": set(params), "body": body}


def _carries(reader: Reader, raw: Any, where: Path) -> bool:
    """Whether a request body can carry something: not an optional one whose every media
    type's schema is a closed object without properties (Stripe's GETs), which a tool
    rightly leaves out."""
    if raw is None:
        return False
    body, where = reader.follow(raw, where)
    if not isinstance(body, dict) or body.get("required") is True:
        return True
    content = body.get("content")
    if not isinstance(content, dict) or not content:
        return True
    for media in content.values():
        schema, _ = reader.follow(media.get("schema") if isinstance(media, dict) else None, where)
        if not (
            isinstance(schema, dict)
            and schema.get("type") in ("object", None)
            and not schema.get("properties")
            and schema.get("additionalProperties") is False
            and not any(key in schema for key in ("allOf", "anyOf", "oneOf", "items"))
        ):
            return True
    return False


def _parameters(reader: Reader, raw: Any, where: Path) -> dict[tuple[str, str], bool]:
    found: dict[tuple[str, str], bool] = {}
    listed, where = reader.follow(raw, where)
    if not isinstance(listed, list):
        return found
    for entry in listed:
        param, _ = reader.follow(entry, where)
        if isinstance(param, dict) and isinstance(param.get("name"), str):
            found[(str(param.get("in")), param["name"])] = True
    return found


def carried(spec: Path, catalog: dict[str, Any], output: str) -> dict[str, Any]:
    """Operations in, tool arguments out: what is missing and not explained by a warning."""
    by_source: dict[str, list[dict[str, Any]]] = {}
    by_endpoint: dict[str, list[dict[str, Any]]] = {}
    for tool in catalog.get("tools", []):
        source = (tool.get("meta") or {}).get("source", "")
        by_source.setdefault(source, []).append(tool)
        request = tool.get("request") or {}
        endpoint = f"{request.get('method', '')} {request.get('path', '')}"
        by_endpoint.setdefault(endpoint, []).append(tool)
    warnings = [line for line in output.splitlines() if ": warning: " in line]
    warned = "\n".join(warnings)
    counted = missing_tools = missing_params = missing_bodies = explained = 0
    samples: list[str] = []
    try:
        listed = list(operations(spec))
    except Exception as exc:  # the script's reader, not mcpmint: recorded, not fatal
        return {"operations": 0, "reader_error": f"{type(exc).__name__}: {exc}"[:200]}
    for op in listed:
        counted += 1
        path, _, method = op["pointer"][len("#/paths/") :].rpartition("/")
        path = path.replace("~1", "/").replace("~0", "~")
        named = f"{method.upper()} {path}"
        # A path item or operation given by `$ref` has its source where the `$ref` leads:
        # then the tool of the same method and path (without a query or fragment) stands.
        endpoint = f"{method.upper()} {path.split('#')[0].split('?')[0]}"
        tools = by_source.get(op["pointer"]) or by_endpoint.get(endpoint, [])
        mentioned = op["pointer"] in warned or f"{method.upper()} {path}" in warned
        if not tools:
            if mentioned:
                explained += 1
            else:
                missing_tools += 1
                samples.append(f"no tool: {named}")
            continue
        request = tools[0].get("request") or {}
        sent = {(p.get("in"), p.get("name")) for p in request.get("parameters", [])}
        sent |= {(p_in, str(name).lower()) for p_in, name in sent if p_in == "header"}
        fixed = set(request.get("query", {}) or {})
        for where, name in sorted(op["parameters"]):
            if where == "header" and name.lower() in OWNED_HEADERS:
                continue
            if (where, name) in sent or (where == "header" and (where, name.lower()) in sent):
                continue
            if where == "query" and name in fixed:
                continue
            if mentioned and name in warned:
                explained += 1
                continue
            missing_params += 1
            samples.append(f"parameter {where} {name!r} not sent: {named}")
        if op["body"] and request.get("body") is None:
            if mentioned:
                explained += 1
            else:
                missing_bodies += 1
                samples.append(f"body not sent: {named}")
    return {
        "operations": counted,
        "missing_tools": missing_tools,
        "missing_parameters": missing_params,
        "missing_bodies": missing_bodies,
        "explained": explained,
        "findings": samples[:5],
    }


# --- one run ---------------------------------------------------------------------------------


def _limits(memory_mib: int) -> Any:
    def apply() -> None:
        limit = memory_mib * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def run_one(
    entry: dict[str, Any],
    work: Path,
    timeout: float,
    memory_mib: int,
    generator: Path = ROOT / "generator",
) -> dict[str, Any]:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", entry["name"])
    out = work / slug
    log = work / f"{slug}.log"
    command = [
        sys.executable,
        "-m",
        "mcpmint",
        "generate",
        str(entry["path"]),
        "-o",
        str(out),
        "--root",
        str(entry["root"]),
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(generator)
    start = time.monotonic()
    with log.open("w", encoding="utf-8") as handle:
        child = subprocess.Popen(
            command,
            cwd=work,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            preexec_fn=_limits(memory_mib),
        )
        timed_out = False
        status, usage = 0, None
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > timeout:
                child.kill()
                _, status, usage = os.wait4(child.pid, 0)
                timed_out = True
                break
            time.sleep(0.02)
        child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - start
    output = log.read_text(encoding="utf-8", errors="replace")
    code = -1 if timed_out else child.returncode
    catalogs = list(out.glob("src/*/_generated/tools.json")) if out.exists() else []
    catalog = json.loads(catalogs[0].read_text("utf-8")) if catalogs else {"tools": []}
    internal = [
        line
        for line in output.splitlines()
        if line.startswith(("internal error:", "Traceback"))
        # the generator's own check of what it built: valid input reaching it is a bug too
        or "the generated tool catalogue is invalid" in line
    ]
    errors = [line for line in output.splitlines() if ": error: " in line]
    check = carried(entry["path"], catalog, output)
    shown = str(shared_root()) + "/"
    return {
        "corpus": entry["corpus"],
        "name": entry["name"],
        "version": entry["version"],
        "exit": code,
        "internal_error": internal[0].replace(shown, "")[:300] if internal else "",
        "error": errors[0].replace(shown, "")[:300] if errors else "",
        "operations": check.get("operations", entry["listed_operations"]),
        "tools": len(catalog.get("tools", [])),
        "warnings": output.count(": warning: "),
        "seconds": round(seconds, 2),
        "peak_mib": round((usage.ru_maxrss if usage else 0) / 1024),
        "check": check,
        "out": str(out),
    }


# --- the table -------------------------------------------------------------------------------


def summary(rows: list[dict[str, Any]]) -> str:
    lines = []
    for corpus in ("sweep", "old", "folder"):
        chosen = [r for r in rows if r["corpus"] == corpus]
        if not chosen:
            continue
        ok = [r for r in chosen if r["exit"] == 0]
        ops = sum(r["operations"] for r in chosen)
        tools = sum(r["tools"] for r in ok)
        slowest = max(chosen, key=lambda r: r["seconds"])
        largest = max(chosen, key=lambda r: r["peak_mib"])
        internal = sum(1 for r in chosen if r["internal_error"])
        unexplained = sum(
            r["check"].get("missing_tools", 0)
            + r["check"].get("missing_parameters", 0)
            + r["check"].get("missing_bodies", 0)
            for r in ok
        )
        lines.append(
            f"- **{corpus}**: {len(ok)} of {len(chosen)} specs generate (exit 0); "
            f"{tools} tools for {ops} operations ({100 * tools / max(ops, 1):.1f}%); "
            f"internal errors: {internal}; unexplained gaps (operation, parameter or body "
            f"without a warning): {unexplained}; "
            f"whole run {sum(r['seconds'] for r in chosen):.0f} s; "
            f"slowest {slowest['name']} {slowest['seconds']} s; "
            f"largest peak {largest['name']} {largest['peak_mib']} MiB"
        )
    return "\n".join(lines)


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| corpus | spec | version | operations | tools | warnings | time (s) | peak (MiB) "
        "| result |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        gaps = (
            r["check"].get("missing_tools", 0)
            + r["check"].get("missing_parameters", 0)
            + r["check"].get("missing_bodies", 0)
        )
        if r["internal_error"]:
            result = f"internal error: `{r['internal_error'][:100]}`"
        elif r["exit"] == 0:
            result = "ok" if not gaps else f"ok, {gaps} unexplained gaps"
        elif r["exit"] == -1:
            result = "**stopped (time limit)**"
        else:
            result = f"exit {r['exit']}: `{r['error'][:100].replace('|', '/')}`"
        lines.append(
            f"| {r['corpus']} | {r['name']} | {r['version']} | {r['operations']} | {r['tools']} "
            f"| {r['warnings']} | {r['seconds']} | {r['peak_mib']} | {result} |"
        )
    return "\n".join(lines)


def header() -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return (
        f"{datetime.date.today().isoformat()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, commit {commit}"
    )


def write_docs(rows: list[dict[str, Any]]) -> None:
    docs = ROOT / "docs" / "corpus.md"
    text = docs.read_text(encoding="utf-8")
    block = f"{DOCS_BEGIN}\n\n{header()}\n\n{summary(rows)}\n\n{table(rows)}\n\n{DOCS_END}"
    if DOCS_BEGIN in text and DOCS_END in text:
        before, _, rest = text.partition(DOCS_BEGIN)
        _, _, after = rest.partition(DOCS_END)
        text = before + block + after
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    docs.write_text(text, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="comma-separated substrings of entry names")
    parser.add_argument("--corpus", choices=("sweep", "old", "all"), default="all")
    parser.add_argument("--jsonl", type=Path, help="write one JSON line per spec here")
    parser.add_argument(
        "--folder", type=Path, help="sweep every JSON or YAML file under this folder instead"
    )
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--memory-mib", type=int, default=4096)
    parser.add_argument(
        "--generator",
        type=Path,
        default=ROOT / "generator",
        help="the folder holding the mcpmint package to run (a baseline: an exported commit)",
    )
    args = parser.parse_args()
    wanted = [n for n in args.only.split(",") if n]
    rows = []
    if args.jsonl:
        args.jsonl.write_text("", encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="mcpmint-sweep-") as folder:
        for entry in entries(args.corpus, args.folder):
            if wanted and not any(w in entry["name"] for w in wanted):
                continue
            row = run_one(entry, Path(folder), args.timeout, args.memory_mib, args.generator)
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
            if args.jsonl:
                with args.jsonl.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(row) + "\n")
            for built in Path(folder).iterdir():  # keep the disk small: only the logs stay
                if built.is_dir():
                    subprocess.run(["rm", "-rf", str(built)], check=False)
    print(summary(rows))
    if args.write_docs:
        write_docs(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
