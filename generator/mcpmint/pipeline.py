"""The table of contents: load -> validate -> build IR -> models -> render -> format -> write.

Each stage reports into one `DiagnosticSink`; the run stops after the first stage that
reported an error, before anything is written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from . import ir
from .cases import build_cases
from .diagnostics import Aborted, DiagnosticSink
from .format import format_tree
from .frontends.openapi import BuildOptions, build_server
from .load import load_document
from .models import models_source
from .render import FileTree, RenderInputs, render
from .validate import validate_document
from .write import WriteReport, write_tree


@dataclass(frozen=True)
class GenerateOptions:
    output: Path | None  # None: ./<distribution> in the current folder
    namespace: str | None = None
    check: bool = False
    force: bool = False
    root: Path | None = None  # the folder `$ref`s may reach; default: the spec's own folder


def _stop_on_errors(sink: DiagnosticSink) -> None:
    if sink.has_errors:
        raise Aborted(sink)


def build(
    spec: Path, sink: DiagnosticSink, namespace: str | None = None, root: Path | None = None
) -> ir.Server:
    """Spec -> IR (load, validate, build). Raises `Aborted` with the diagnostics on errors."""
    document = load_document(spec, sink, root=root)
    _stop_on_errors(sink)
    assert document is not None
    version = validate_document(document, sink)
    _stop_on_errors(sink)
    assert version is not None
    server = build_server(document, version, BuildOptions(namespace=namespace), sink)
    _stop_on_errors(sink)
    assert server is not None
    return server


def render_server(server: ir.Server, spec_file: str, sink: DiagnosticSink) -> FileTree:
    """IR -> formatted files in memory. Raises `Aborted` on errors."""
    models = models_source(server, sink)
    _stop_on_errors(sink)
    cases = build_cases(server, sink)
    _stop_on_errors(sink)
    tree = render(RenderInputs(server=server, models=models, cases=cases, spec_file=spec_file))
    tree = format_tree(tree, sink)
    _stop_on_errors(sink)
    return tree


def generate(spec: Path, options: GenerateOptions, sink: DiagnosticSink) -> WriteReport:
    """The whole pipeline. Raises `Aborted` (nothing written) when a stage before writing
    reports an error; refusals to overwrite come back in the report (and the sink)."""
    server = build(spec, sink, options.namespace, options.root)
    output = options.output or Path(server.distribution)
    spec_file = Path(os.path.relpath(spec.absolute(), output.absolute())).as_posix()
    tree = render_server(server, spec_file, sink)
    report = write_tree(tree, output, check=options.check, force=options.force, sink=sink)
    report.output = output
    return report
