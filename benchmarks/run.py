"""Benchmarks: mcpmint next to openapi-mcp-generator, on the same specs, in the same run.

    .venv/bin/python benchmarks/run.py [--specs petstore-plus,stripe,github] [--repeat N]
                                       [--no-peers] [--no-servers] [--json rows.json]

For each spec: cold `mcpmint generate` time and peak RSS (`/usr/bin/time -v` on a
subprocess), the `tools/list` size in bytes and estimated tokens (bytes / 4), also without
`outputSchema` (most clients do not send it to the model); and, when npm can install it into
`.tools/`, `openapi-mcp-generator@4.0.1` time, memory and the size of the tool definitions
in its generated source. The two generators run `--repeat` times each (default 5), one after
the other in turn, each into a new folder: one machine's speed drifts by 10-20% within
minutes, so a single run of each can put the ratio anywhere between two of its values; the
table gives each one's median and range, and the median and range of mcpmint's time over the
peer's in each pair of runs made one right after the other.
Prints a Markdown table for docs/benchmarks.md. Then, unless
`--no-servers`, `peers.py` runs each generated server (and FastMCP's `from_openapi`) over stdio:
start-up to the first tools/list, peak memory, per-call overhead; a second table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import peers  # benchmarks/peers.py: servers at run time (this folder is on sys.path)
from report import machine, write_section

ROOT = Path(__file__).resolve().parents[1]
SPECS = {
    "petstore-plus": ROOT / "specs" / "petstore-plus.yaml",
    "stripe": ROOT.parent / "shared" / "corpus" / "stripe.yaml",
    "github": ROOT.parent / "shared" / "corpus" / "github.json",
}
PEER = "openapi-mcp-generator@4.0.1"
TOOLS = ROOT / ".tools"


def timed(command: list[str], cwd: Path) -> dict[str, Any]:
    """Wall time (s), peak RSS (MB) and exit code of `command`, via /usr/bin/time -v."""
    done = subprocess.run(
        ["/usr/bin/time", "-v", *command], cwd=cwd, capture_output=True, text=True, check=False
    )
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", done.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    seconds = 0.0
    if wall:
        for part in wall.group(1).split(":"):
            seconds = seconds * 60 + float(part)
    return {
        "seconds": round(seconds, 2),
        "peak_mb": round(int(rss.group(1)) / 1024) if rss else None,
        "rc": done.returncode,
        "stdout": done.stdout,
        "stderr": done.stderr[-2000:],
    }


def compile_mcpmint() -> None:
    """mcpmint's modules compiled to bytecode, as an install from a wheel has them (pip
    compiles at install time): this machine sets PYTHONDONTWRITEBYTECODE=1, under which an
    editable checkout would compile every module on every run (0.1 s of each, measured).
    The package is the one `python -m mcpmint` runs here (a frozen copy on PYTHONPATH too)."""
    where = subprocess.run(
        [sys.executable, "-c", "import mcpmint, os; print(os.path.dirname(mcpmint.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run([sys.executable, "-m", "compileall", "-q", where], check=True)


def size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def mcpmint(spec: Path, work: Path) -> dict[str, Any]:
    out = work / "mcpmint-out"
    run = timed([sys.executable, "-m", "mcpmint", "generate", str(spec), "-o", str(out)], ROOT)
    row: dict[str, Any] = {"tool": "mcpmint", "seconds": run["seconds"], "peak_mb": run["peak_mb"]}
    catalog = next(out.glob("src/*/_generated/tools.json"), None) if run["rc"] == 0 else None
    if catalog is None:
        row["error"] = run["stderr"][-300:]
        return row
    tools = _definitions(json.loads(catalog.read_text()))
    row["tools"] = len(tools)
    row["bytes"] = size({"tools": tools})
    row["bytes_no_output"] = size({"tools": [_without_output(t) for t in tools]})
    return row


def _definitions(catalog: Any) -> list[dict[str, Any]]:
    tools = catalog.get("tools", catalog) if isinstance(catalog, dict) else catalog
    keys = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
    return [{k: t[k] for k in keys if t.get(k) is not None} for t in tools]


def _without_output(tool: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in tool.items() if k != "outputSchema"}


def install_peer() -> Path | None:
    binary = TOOLS / "node_modules" / ".bin" / "openapi-mcp-generator"
    if not binary.exists() and shutil.which("npm"):
        subprocess.run(
            ["npm", "install", "--prefix", str(TOOLS), PEER], capture_output=True, check=False
        )
    return binary if binary.exists() else None


def peer(binary: Path, spec: Path, work: Path) -> dict[str, Any]:
    out = work / "peer-out"
    run = timed([str(binary), "-i", str(spec), "-o", str(out), "-t", "stdio", "--force"], work)
    row: dict[str, Any] = {"tool": PEER, "seconds": run["seconds"], "peak_mb": run["peak_mb"]}
    source = out / "src" / "index.ts"
    if run["rc"] != 0 or not source.exists():
        row["error"] = run["stderr"][-300:]
        return row
    # Its tools live in one `toolDefinitionMap` literal in the generated source; its server
    # sends name, description and inputSchema of each. Counted as that literal's bytes.
    text = source.read_text()
    start = text.find("toolDefinitionMap")
    end = text.find("]);", start)
    block = text[start:end] if start >= 0 and end > start else ""
    row["tools"] = block.count("name: ")
    row["bytes"] = len(block.encode("utf-8"))
    row["bytes_no_output"] = row["bytes"]
    return row


def combined(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One row for repeated runs of a generator: the first's sizes, the median time with the
    range, the largest peak; the first failure, if any failed."""
    failed = next((run for run in runs if "error" in run), None)
    if failed is not None:
        return failed
    times = sorted(run["seconds"] for run in runs)
    row = dict(runs[0])
    row["seconds"] = round(statistics.median(times), 2)
    row["range"] = f"{times[0]}-{times[-1]}"
    row["runs"] = len(times)
    row["times"] = [run["seconds"] for run in runs]  # in the order they ran
    row["peak_mb"] = max(run["peak_mb"] or 0 for run in runs)
    return row


def pair_ratio(ours: dict[str, Any], theirs: dict[str, Any]) -> str:
    """The median, and the range, of mcpmint's time over the peer's in each pair of runs made
    one right after the other: the machine's drift over a run (10-20% in minutes, measured)
    moves both of a pair alike."""
    pairs = [
        a / b for a, b in zip(ours.get("times", []), theirs.get("times", []), strict=False) if b
    ]
    if not pairs:
        return ""
    pairs.sort()
    return f"{statistics.median(pairs):.1f} ({pairs[0]:.1f}-{pairs[-1]:.1f})"


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| spec | tool | tools | gen s (median, range) | x peer (pairs) | peak MB "
        "| tools/list bytes | ~tokens | without outputSchema | ~tokens |"
    )
    lines = [head, "|" + "---|" * 10]
    peers_by_spec = {r["spec"]: r for r in rows if r["tool"] == PEER and "error" not in r}
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['spec']} | {r['tool']} | failed: {r['error'][:80]!r} ||||||||")
            continue
        other = peers_by_spec.get(r["spec"])
        ratio = pair_ratio(r, other) if r["tool"] != PEER and other is not None else ""
        timing = f"{r['seconds']} ({r.get('range', r['seconds'])})"
        lines.append(
            f"| {r['spec']} | {r['tool']} | {r['tools']} | {timing} | {ratio} | {r['peak_mb']} | "
            f"{r['bytes']:,} | {r['bytes'] // 4:,} | {r['bytes_no_output']:,} | "
            f"{r['bytes_no_output'] // 4:,} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--specs", default="petstore-plus,stripe,github")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument(
        "--no-servers", action="store_true", help="skip start-up and per-call (peers.py)"
    )
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument(
        "--repeat", type=int, default=5, help="runs of each generator, in turn (default 5)"
    )
    parser.add_argument(
        "--write-docs", action="store_true", help="put the tables into docs/benchmarks.md"
    )
    args = parser.parse_args()
    compile_mcpmint()
    binary = None if args.no_peers else install_peer()
    fastmcp = None if args.no_peers or args.no_servers else peers.install_fastmcp()
    rows: list[dict[str, Any]] = []
    servers: list[dict[str, Any]] = []
    for name in args.specs.split(","):
        spec = SPECS[name]
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            ours: list[dict[str, Any]] = []
            theirs: list[dict[str, Any]] = []
            repeat = max(1, args.repeat)
            for attempt in range(repeat):
                # The last run writes where the servers are started from (`work`).
                folder = work if attempt == repeat - 1 else work / f"run-{attempt}"
                folder.mkdir(exist_ok=True)
                ours.append(mcpmint(spec, folder))
                if binary is not None:
                    theirs.append(peer(binary, spec, folder))
            rows.append({"spec": name, **combined(ours)})
            if theirs:
                rows.append({"spec": name, **combined(theirs)})
            print(json.dumps(rows[-2:]), file=sys.stderr)
            if not args.no_servers:
                peer_name = PEER if binary is not None else None
                servers.extend(peers.server_rows(name, spec, work, peer_name, fastmcp))
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(
        f"{stamp}; {platform.node()}; {platform.processor() or platform.machine()}; "
        f"Python {platform.python_version()}\n"
    )
    print(table(rows))
    if servers:
        print("\n" + peers.server_table(servers))
    if args.write_docs:
        command = " ".join(["benchmarks/run.py", *sys.argv[1:]])
        text = (
            f"## Generation and servers, side by side with the peers\n\n`{command}`, "
            f"{machine()}; {args.repeat} runs of each generator, in turn.\n\n{table(rows)}"
        )
        if servers:
            text += "\n\n" + peers.server_table(servers)
        write_section("generation", text)
    if args.json:
        args.json.write_text(json.dumps(rows + servers, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
