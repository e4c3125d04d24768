"""The table of contents: load -> validate -> build IR -> models -> render -> format -> write.

Each stage reports into one `DiagnosticSink`; the run stops after the first stage that
reported an error, before anything is written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import ir
from .cases import build_cases
from .diagnostics import Aborted, DiagnosticSink
from .format import format_tree
from .frontends.openapi import BuildOptions, build_server
from .load import load_document
from .lock import LOCK_FILE, LockError, diff_locks, has_breaking, lock_text, parse_lock
from .models import models_source
from .render import FileTree, RenderInputs, render
from .resources import generator_identity
from .validate import validate_document
from .write import WriteReport, file_sha256, inputs_fingerprint, quick_up_to_date, write_tree


@dataclass(frozen=True)
class GenerateOptions:
    output: Path | None  # None: ./<distribution> in the current folder
    namespace: str | None = None
    check: bool = False
    force: bool = False
    root: Path | None = None  # the folder `$ref`s may reach; default: the spec's own folder
    accept_breaking: bool = False  # write even when the tool surface has breaking changes


def _stop_on_errors(sink: DiagnosticSink) -> None:
    if sink.has_errors:
        raise Aborted(sink)


def build(
    spec: Path, sink: DiagnosticSink, namespace: str | None = None, root: Path | None = None
) -> ir.Server:
    """Spec -> IR (load, validate, build). Raises `Aborted` with the diagnostics on errors."""
    return build_with_inputs(spec, sink, namespace, root)[0]


def build_with_inputs(
    spec: Path, sink: DiagnosticSink, namespace: str | None = None, root: Path | None = None
) -> tuple[ir.Server, tuple[Path, ...]]:
    """Like `build`, and also every file that was read (entry first)."""
    document = load_document(spec, sink, root=root)
    _stop_on_errors(sink)
    assert document is not None
    version = validate_document(document, sink)
    _stop_on_errors(sink)
    assert version is not None
    server = build_server(document, version, BuildOptions(namespace=namespace), sink)
    _stop_on_errors(sink)
    assert server is not None
    return server, document.files


def render_server(server: ir.Server, spec_file: str, sink: DiagnosticSink) -> FileTree:
    """IR -> formatted files in memory. Raises `Aborted` on errors."""
    models = models_source(server, sink)
    _stop_on_errors(sink)
    cases = build_cases(server, sink)
    _stop_on_errors(sink)
    tree = render(RenderInputs(server=server, models=models, cases=cases, spec_file=spec_file))
    tree = format_tree(tree, sink)
    _stop_on_errors(sink)
    return FileTree(
        generated={**tree.generated, LOCK_FILE: lock_text(server)}, scaffold=tree.scaffold
    )


def _relative(path: Path, output: Path) -> str:
    return Path(os.path.relpath(path.absolute(), output.absolute())).as_posix()


def _options(options: GenerateOptions) -> dict[str, Any]:
    """The generate options that shape the output, as the inputs fingerprint records them."""
    return {"namespace": options.namespace}


def up_to_date(spec: Path, options: GenerateOptions) -> bool:
    """The quick `--check`: inputs and generated files unchanged since the last run (only
    files are hashed). Needs an explicit output folder; False means "run the pipeline"."""
    if options.output is None:
        return False
    return quick_up_to_date(
        options.output, _relative(spec, options.output), _options(options), generator_identity()
    )


def previous_lock(output: Path, sink: DiagnosticSink) -> dict[str, Any] | None:
    """The output folder's current `tools.lock.json`, or None when there is none (or it is
    unreadable, which is reported as a warning: the write stage guards the file itself)."""
    path = output / LOCK_FILE
    if not path.is_file():
        return None
    try:
        return parse_lock(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, LockError) as exc:
        sink.warning(str(path), f"previous lock ignored: {exc}", "restore it from version control")
        return None


def generate(spec: Path, options: GenerateOptions, sink: DiagnosticSink) -> WriteReport:
    """The whole pipeline. Raises `Aborted` (nothing written) when a stage before writing
    reports an error; refusals to overwrite come back in the report (and the sink), and so do
    the changes to the tool surface: with breaking ones and no `accept_breaking`, nothing is
    written and the report is `blocked`.

    With `check`, a run whose inputs fingerprint and generated files are unchanged returns at
    once (`report.quick`), without loading the spec.
    """
    if options.check and up_to_date(spec, options):
        report = WriteReport(quick=True)
        report.output = options.output
        return report
    server, files = build_with_inputs(spec, sink, options.namespace, options.root)
    output = options.output or Path(server.distribution)
    spec_file = _relative(spec, output)
    tree = render_server(server, spec_file, sink)
    old_lock = previous_lock(output, sink)
    changes = (
        [] if old_lock is None else diff_locks(old_lock, parse_lock(tree.generated[LOCK_FILE]))
    )
    if has_breaking(changes) and not options.accept_breaking and not options.check:
        report = WriteReport(lock_changes=changes, blocked=True)
        report.output = output
        return report
    inputs = inputs_fingerprint(
        spec_file,
        {_relative(path, output): file_sha256(path) for path in files},
        _options(options),
        generator_identity(),
    )
    report = write_tree(
        tree, output, check=options.check, force=options.force, sink=sink, inputs=inputs
    )
    report.output = output
    report.lock_changes = changes
    return report
