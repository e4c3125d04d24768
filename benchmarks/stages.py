"""Per-stage wall and CPU times of one cold, in-line generation (no cache, no fork).

    .venv/bin/python benchmarks/stages.py SPEC [--all-results]

Calls the pipeline's stages one after the other in this process and prints each one's wall
and CPU time: where a cold `mcpmint generate` spends its time (docs/benchmarks.md). CPU time
is the steadier figure on a shared machine. The typed models are made as
`output.result_models: auto` decides; `--all-results` also times them with a
result model for every tool (`result_models: all`), for comparison.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpmint.build.frontends.openapi import BuildOptions, build_server
from mcpmint.build.largeapi import every_tool_tokens, result_models_for
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.load.document import load_document
from mcpmint.load.validate import validate_document
from mcpmint.render.cases import CASES_PATH, build_cases
from mcpmint.render.format import format_tree
from mcpmint.render.models import models_source
from mcpmint.render.templates import RenderInputs, dump_json, models_file, models_path, render
from mcpmint.write.lock import lock_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", type=Path)
    parser.add_argument("--all-results", action="store_true")
    args = parser.parse_args()
    times: dict[str, float] = {}
    cpus: dict[str, float] = {}

    def timed(name: str, stage: Callable[..., Any], *arguments: Any, **keywords: Any) -> Any:
        started, cpu = time.perf_counter(), time.process_time()
        result = stage(*arguments, **keywords)
        times[name] = time.perf_counter() - started
        cpus[name] = time.process_time() - cpu
        print(f"{name:24s} {times[name]:7.2f} s {cpus[name]:7.2f} s CPU", flush=True)
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
    tree = timed("render", render, RenderInputs(server=server, spec_file="spec"))
    tree.generated[models_path(server)] = models_file(models)
    tree.generated[CASES_PATH] = dump_json(cases)
    timed("format (ruff)", format_tree, tree, sink)
    timed("lock", lock_text, server)
    print(f"{'total':24s} {sum(times.values()):7.2f} s {sum(cpus.values()):7.2f} s CPU")
    if args.all_results:
        timed("typed models, all results", models_source, server, sink, None)


if __name__ == "__main__":
    main()
