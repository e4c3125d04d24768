"""Regeneration benchmark: cold, no-op and one-operation-changed `mcpmint generate` runs.

    .venv/bin/python benchmarks/regen.py [--specs github,stripe] [--rounds N] [--json rows.json]

(To measure while mcpmint's code is being edited, copy `generator/`, `templates/` and `specs/`
to a folder and prefix the command with `PYTHONPATH=<folder>/generator`.)

For each spec, in a fresh temporary folder (the spec is copied there as JSON, so an edit is a
plain JSON edit; YAML specs are converted once, before timing), each a `mcpmint generate`
subprocess under `/usr/bin/time -v` (wall time, peak RSS):

1. `cold`: into a new output folder (no stage cache);
2. `no-op --check`: unchanged inputs, `--check` (answered from the inputs fingerprint);
3. `no-op`: unchanged inputs, a plain `generate` (answered from the inputs fingerprint too:
   it would write nothing);
4. `one description`: one operation's description changed (typed models unchanged);
5. `one parameter`: an optional query parameter added to another operation (its typed model
   changes);
6. `reverted`: the original spec again. Removing the added parameter is a breaking change to
   the tool surface, so this run is refused before it writes (exit 1, as without
   `--accept-breaking`): it times everything but the writes.

mcpmint's modules are compiled to bytecode first, as an install has them (`run.compile_mcpmint`).

`--rounds N` repeats the whole sequence N times, each round in a fresh folder, and the table
gives each step's median seconds and median share of its own round's cold run, with their
ranges: on a shared machine one sequence's shares vary by several points from one minute to
the next, so a single round decides nothing near a line.

Prints the date, the machine and a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from report import machine, write_section
from run import SPECS, compile_mcpmint, timed  # benchmarks/run.py (this folder is on sys.path)

# `python -m mcpmint`, so that PYTHONPATH=<a copy of generator/> measures a frozen copy: in a
# checkout being edited, any change to mcpmint's code changes the generator identity, and
# with it every cache key and the inputs fingerprint.
MCPMINT = [sys.executable, "-m", "mcpmint", "generate"]
METHODS = ("get", "put", "post", "delete", "patch")


def operations(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every operation object, in document order."""
    found = []
    for item in document.get("paths", {}).values():
        for method in METHODS:
            if isinstance(item, dict) and isinstance(item.get(method), dict):
                found.append(item[method])
    return found


def with_description_changed(document: dict[str, Any]) -> dict[str, Any]:
    changed = json.loads(json.dumps(document))
    operation = operations(changed)[len(operations(changed)) // 2]
    operation["description"] = str(operation.get("description", "")) + " (edited)"
    return changed


def with_parameter_added(document: dict[str, Any]) -> dict[str, Any]:
    changed = json.loads(json.dumps(document))
    operation = operations(changed)[len(operations(changed)) // 3]
    parameter = {"name": "mcpmint_bench", "in": "query", "schema": {"type": "string"}}
    operation["parameters"] = [*operation.get("parameters", []), parameter]
    return changed


def measure(name: str, spec: Path, work: Path, round_: int = 0) -> list[dict[str, Any]]:
    text = spec.read_text(encoding="utf-8")
    document = json.loads(text) if spec.suffix == ".json" else yaml.load(text, yaml.CSafeLoader)
    target, out = work / f"{name}.json", work / f"{name}-out"
    steps = [
        ("cold", document, []),
        ("no-op --check", None, ["--check"]),
        ("no-op", None, []),
        ("one description", with_description_changed(document), []),
        ("one parameter", with_parameter_added(document), []),
        ("reverted", document, []),
    ]
    rows = []
    for step, content, extra in steps:
        if content is not None:
            target.write_text(json.dumps(content, indent=1), encoding="utf-8")
        result = timed([*MCPMINT, str(target), "-o", str(out), *extra], work)
        if result["rc"] not in (0, 1):
            print(result["stderr"], file=sys.stderr)
        measured = {key: result[key] for key in ("seconds", "peak_mb")}
        rows.append({"spec": name, "step": step, "round": round_, **measured})
        print(
            f"{name:14s} {step:16s} {result['seconds']:7.2f} s {result['peak_mb']} MB", flush=True
        )
    return rows


def table(rows: list[dict[str, Any]], rounds: int) -> str:
    """The Markdown table: each step's seconds, peak and share of its round's cold run; with
    several rounds, the medians and (in brackets) the ranges."""
    cold = {(row["spec"], row["round"]): row["seconds"] for row in rows if row["step"] == "cold"}
    steps: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        share = (
            row["seconds"] / cold[row["spec"], row["round"]]
            if cold[row["spec"], row["round"]]
            else 0.0
        )
        steps.setdefault((row["spec"], row["step"]), []).append({**row, "share": share})
    head = "| spec | run | s | peak MB | of cold |"
    if rounds > 1:
        head = f"| spec | run | s (median of {rounds}) | peak MB (median) | of cold (median) |"
    lines = [head, "|---|---|---|---|---|"]
    for (spec, step), measured in steps.items():
        seconds = [row["seconds"] for row in measured]
        shares = [row["share"] for row in measured]
        peaks = [row["peak_mb"] for row in measured if row["peak_mb"] is not None]
        peak = round(statistics.median(peaks)) if peaks else None
        if rounds == 1:
            lines.append(f"| {spec} | {step} | {seconds[0]:.2f} | {peak} | {shares[0]:.0%} |")
            continue
        lines.append(
            f"| {spec} | {step} | {statistics.median(seconds):.2f} ({min(seconds):.2f}-"
            f"{max(seconds):.2f}) | {peak} | {statistics.median(shares):.0%} "
            f"({min(shares):.0%}-{max(shares):.0%}) |"
        )
    return "\n" + "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", default="github,stripe")
    parser.add_argument("--rounds", type=int, default=1, help="sequences per spec (default 1)")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--write-docs", action="store_true", help="put the table into docs/benchmarks.md"
    )
    args = parser.parse_args()
    compile_mcpmint()
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mcpmint-regen-") as folder:
        for round_ in range(args.rounds):
            for name in args.specs.split(","):
                rows += measure(name, SPECS[name], Path(folder), round_)
                shutil.rmtree(Path(folder) / f"{name}-out", ignore_errors=True)
    print(
        f"\n{started}, {platform.node()}, {platform.machine()}, Python {platform.python_version()}"
    )
    print(table(rows, args.rounds))
    if args.write_docs:
        command = " ".join(["benchmarks/regen.py", *sys.argv[1:]])
        text = f"## Regeneration\n\n`{command}`, {machine()}.\n{table(rows, args.rounds)}"
        write_section("regeneration", text)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
