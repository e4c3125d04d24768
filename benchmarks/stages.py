"""Per-stage wall times of one cold, in-line generation (no cache, no second process).

    .venv/bin/python benchmarks/stages.py SPEC [--args-only]

Calls the pipeline's stages one after the other in this process and prints each one's wall
time: where a cold `mcpmint generate` spends its time (docs/benchmarks.md). `--args-only`
also times the typed models without result models, for comparison.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpmint.cases import build_cases
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.format import format_tree
from mcpmint.frontends.openapi import BuildOptions, build_server
from mcpmint.load import load_document
from mcpmint.lock import lock_text
from mcpmint.models import models_source
from mcpmint.render import RenderInputs, render
from mcpmint.validate import validate_document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", type=Path)
    parser.add_argument("--args-only", action="store_true")
    args = parser.parse_args()
    times: dict[str, float] = {}

    def timed(name: str, stage: Callable[..., Any], *arguments: Any) -> Any:
        started = time.perf_counter()
        result = stage(*arguments)
        times[name] = time.perf_counter() - started
        print(f"{name:24s} {times[name]:7.2f} s", flush=True)
        return result

    sink = DiagnosticSink()
    document = timed("load", load_document, args.spec, sink)
    version = timed("validate", validate_document, document, sink)
    server = timed(
        "build (convert, compact)", build_server, document, version, BuildOptions(), sink
    )
    models = timed("typed models", models_source, server, sink)
    cases = timed("cases", build_cases, server, sink)
    inputs = RenderInputs(server=server, models=models, cases=cases, spec_file="spec")
    tree = timed("render", render, inputs)
    timed("format (ruff)", format_tree, tree, sink)
    timed("lock", lock_text, server)
    print(f"{'total':24s} {sum(times.values()):7.2f} s")
    if args.args_only:
        tools = tuple(dataclasses.replace(t, output_schema=None) for t in server.tools)
        bare = dataclasses.replace(server, tools=tools)
        timed("typed models, args only", models_source, bare, sink)


if __name__ == "__main__":
    main()
