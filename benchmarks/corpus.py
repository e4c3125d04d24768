"""The corpus table: every spec of ../shared/corpus, generated one after the other.

    .venv/bin/python benchmarks/corpus.py [--only stripe,github] [--json rows.jsonl]

For each row of `../shared/corpus/INDEX.tsv`: `python -m mcpmint generate` in a subprocess,
as a user runs it (`--root` set to the spec's own corpus folder for multi-file specs), under
`/usr/bin/time -f "%e %M"`: wall time and peak resident memory of the whole run (load,
validate, build, typed models, render, format, write). Then the tools generated (the
package's tools.json), the warnings printed and the outcome. Prints the Markdown table of
docs/corpus.md, headed by the date, machine and commit. Run it on a quiet machine: the times
are wall times.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
TIMEOUT = 900  # seconds; a run past it is stopped and recorded as such


def rows() -> list[dict[str, str]]:
    with (CORPUS / "INDEX.tsv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def measure(row: dict[str, str], work: Path) -> dict[str, Any]:
    entry = row["entry_file"]
    root = CORPUS / entry.split("/")[0] if "/" in entry else CORPUS
    out = work / row["name"]
    stats = work / f"{row['name']}.time"
    command = [
        "/usr/bin/time",
        "-f",
        "%e %M",
        "-o",
        str(stats),
        sys.executable,
        "-m",
        "mcpmint",
        "generate",
        str(CORPUS / entry),
        "-o",
        str(out),
        "--root",
        str(root),
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(ROOT / "generator")
    try:
        done = subprocess.run(
            command, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT
        )
        code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        code, output = -1, ""
    seconds, peak = 0.0, 0
    if stats.exists():
        fields = stats.read_text().split()
        if len(fields) >= 2:
            seconds, peak = float(fields[-2]), int(fields[-1])
    catalogs = list(out.glob("src/*/_generated/tools.json")) if out.exists() else []
    tools = len(json.loads(catalogs[0].read_text("utf-8"))["tools"]) if catalogs else 0
    errors = [line for line in output.splitlines() if ": error: " in line]
    left_out = len(re.findall(r"left out \(--allow-partial\)", output))
    return {
        "name": row["name"],
        "version": row["version"],
        "bytes": int(row["size_bytes"] or 0),
        "operations": int(row["operations"] or 0),
        "tools": tools,
        "warnings": len(re.findall(r": warning: ", output)),
        "seconds": round(seconds, 1),
        "peak_mib": round(peak / 1024),
        "exit": code,
        "error": errors[0].replace(str(CORPUS) + "/", "") if errors else "",
        "left_out": left_out,
    }


def _size(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f} MB"
    return f"{n / 1000:.0f} kB" if n >= 1000 else f"{n / 1000:.1f} kB"


def table(measured: list[dict[str, Any]]) -> str:
    lines = [
        "| spec | version | size | operations | tools | warnings | time (s) | peak RSS (MiB) "
        "| result |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in measured:
        if r["exit"] == 0:
            result = "ok" if r["tools"] == r["operations"] else f"ok, {r['tools']} tools"
        elif r["exit"] == -1:
            result = f"**stopped after {TIMEOUT} s**"
        else:
            result = f"exit {r['exit']}: `{r['error'][:120]}`"
        lines.append(
            f"| {r['name']} | {r['version'].replace('openapi ', '').replace('swagger', 'Swagger')} "
            f"| {_size(r['bytes'])} | {r['operations']} | {r['tools']} | {r['warnings']} "
            f"| {r['seconds']} | {r['peak_mib']} | {result} |"
        )
    return "\n".join(lines)


def header() -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    cpu = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        found = re.search(r"model name\s*:\s*(.+)", cpuinfo.read_text())
        cpu = found.group(1).strip() if found else ""
    return (
        f"{datetime.date.today().isoformat()}, {os.cpu_count()} cores ({cpu}), "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}, "
        f"commit {commit}{' plus uncommitted work' if dirty else ''}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="comma-separated spec names")
    parser.add_argument("--json", type=Path, help="also append one JSON line per spec here")
    args = parser.parse_args()
    wanted = {n for n in args.only.split(",") if n}
    measured = []
    with tempfile.TemporaryDirectory(prefix="mcpmint-corpus-") as folder:
        for row in rows():
            if wanted and row["name"] not in wanted:
                continue
            result = measure(row, Path(folder))
            print(json.dumps(result), file=sys.stderr, flush=True)
            measured.append(result)
            if args.json:
                with args.json.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(result) + "\n")
    print(header())
    print()
    print(table(measured))
    return 0


if __name__ == "__main__":
    sys.exit(main())
