"""Per-stage wall times of one cold, in-line generation (no cache, no second process).

    .venv/bin/python benchmarks/stages.py SPEC [--all-results]

Calls the pipeline's stages one after the other in this process and prints each one's wall
time: where a cold `mcpmint generate` spends its time (docs/benchmarks.md). Like a real run,
the cyclic garbage collector runs rarely (`pipeline.rare_collections`). The typed models
are made as `output.result_models: auto` decides; `--all-results` also times them with a
result model for every tool (`result_models: all`), for comparison.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpmint.cases import build_cases
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.format import format_tree
from mcpmint.frontends.openapi import BuildOptions, build_server
from mcpmint.largeapi import every_tool_tokens, result_models_for
from mcpmint.load import load_document
from mcpmint.lock import lock_text
from mcpmint.models import models_source
from mcpmint.pipeline import rare_collections
from mcpmint.render import RenderInputs, render
from mcpmint.validate import validate_document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", type=Path)
    parser.add_argument("--all-results", action="store_true")
    args = parser.parse_args()
    times: dict[str, float] = {}

    def timed(name: str, stage: Callable[..., Any], *arguments: Any, **keywords: Any) -> Any:
        started = time.perf_counter()
        result = stage(*arguments, **keywords)
        times[name] = time.perf_counter() - started
        print(f"{name:24s} {times[name]:7.2f} s", flush=True)
        return result

    sink = DiagnosticSink()
    document = timed("load", load_document, args.spec, sink)
    version = timed("validate", validate_document, document, sink)
    server = timed(
        "build (convert, compact)", build_server, document, version, BuildOptions(), sink
    )
    every_result = result_models_for("auto", every_tool_tokens(server))
    models = timed("typed models", models_source, server, sink, None, every_result=every_result)
    cases = timed("cases", build_cases, server, sink)
    inputs = RenderInputs(server=server, models=models, cases=cases, spec_file="spec")
    tree = timed("render", render, inputs)
    timed("format (ruff)", format_tree, tree, sink)
    timed("lock", lock_text, server)
    print(f"{'total':24s} {sum(times.values()):7.2f} s")
    if args.all_results:
        timed("typed models, all results", models_source, server, sink, None)


if __name__ == "__main__":
    with rare_collections():
        main()
