"""The table of contents: load -> validate -> build IR -> models -> render -> format -> write.

Each stage reports into one `DiagnosticSink`; the run stops after the first stage that
reported an error, before anything is written; the spec's validation (warnings only) goes on
beside the other stages and is reported when the run ends. The stage cache (cache.py) and
its memos of the built tools (toolmemo.py) and of their test cases (cases.py) make a
regeneration fast: they skip work whose inputs did not change, and give the bytes a cold run
gives. The quick check of an unchanged project (quickcheck.py) is the
command line's, made before this module is imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mcpmint import ir
from mcpmint.build.frontends.manifest import build_manifest_server, is_manifest
from mcpmint.build.frontends.openapi import BuildOptions, build_server
from mcpmint.build.largeapi import every_tool_tokens, is_large, result_models_for, warn_if_large
from mcpmint.build.resource_templates import add_resource_templates
from mcpmint.build.sources import Part, merge_sources
from mcpmint.build.strict import strict_server
from mcpmint.build.toolmodes import apply_tools_options, check_budget
from mcpmint.config import CONFIG_NAMES, Config, Source, find_config, scaffold_text
from mcpmint.diagnostics import Aborted, DiagnosticSink
from mcpmint.load.document import RawDocument, load_document
from mcpmint.load.validate import Findings, start_validation
from mcpmint.render.cases import CASES_PATH, spec_source, start_cases, warn_without_oracle
from mcpmint.render.format import Formatter, format_tree
from mcpmint.render.models import start_models
from mcpmint.render.templates import (
    FileTree,
    RenderInputs,
    catalog,
    models_file,
    models_path,
    render,
)
from mcpmint.resources import generator_identity
from mcpmint.write.cache import CACHE_DIR, Memo, StageCache
from mcpmint.write.files import (
    FROM_CONFIG,
    WriteReport,
    file_sha256,
    inputs_fingerprint,
    record_from_config,
    recorded_inputs,
    write_tree,
)
from mcpmint.write.lock import (
    LOCK_FILE,
    Change,
    PreviousLock,
    diff_locks,
    dump,
    has_breaking,
    lock_document,
    read_previous_lock,
)
from mcpmint.write.quickcheck import GenerateOptions, relative, run_options

__all__ = [
    "GenerateOptions",
    "RenderOptions",
    "build",
    "build_cached",
    "build_config",
    "build_with_inputs",
    "generate",
    "render_server",
]


def generate(source: Path | Config, options: GenerateOptions, sink: DiagnosticSink) -> WriteReport:
    """The whole pipeline, from a spec or from a project config (`mcpmint.yaml`, whose folder
    is the default output folder). Raises `Aborted` (nothing written) when a stage before
    writing reports an error; refusals to overwrite come back in the report (and the sink),
    and so do the changes to the tool surface: with breaking ones and no `accept_breaking`,
    nothing is written and the report is `blocked`."""
    config = source if isinstance(source, Config) else None
    folder = options.output or (config.folder if config else None)
    cache = StageCache(folder / CACHE_DIR if folder is not None else None)
    memo = cache.memo("tools")
    spec = config.source.spec if config else source
    assert isinstance(spec, Path)
    previous = read_previous_lock(folder)
    # The spec's validation goes on meanwhile (in a child on a large spec): its findings are
    # warnings, reported when the run ends.
    with Findings() as findings:
        server, files = _build(
            spec,
            sink,
            findings,
            options.namespace,
            options.root,
            config=config,
            allow_partial=options.allow_partial,
            cache=cache,
            memo=memo,
            previous_names=previous.names(),
        )
        output = folder or Path(server.distribution)  # a spec's output is named after it
        if folder is None:
            previous = read_previous_lock(output)
        cache.folder = output / CACHE_DIR
        how = _render_options(server, spec, output, config, options, sink)
        tree = render_server(server, how, sink, cache)
        inputs = (*files, config.path) if config else files
        report = write_outputs(tree, inputs, spec, output, config, options, sink, previous)
        report.catalog = {**catalog(server), "tools": []}
    if not options.check and not report.blocked and not sink.has_errors:
        cache.keep("tools", memo)
        cache.save()
    return report


# ------------------------------------------------------------------ load, validate, build IR


def build(
    spec: Path,
    sink: DiagnosticSink,
    namespace: str | None = None,
    root: Path | None = None,
    *,
    allow_partial: bool = False,
) -> ir.Server:
    """Spec -> IR (load, validate, build). Raises `Aborted` with the diagnostics on errors."""
    return build_with_inputs(spec, sink, namespace, root, allow_partial=allow_partial)[0]


def build_config(config: Config, sink: DiagnosticSink, *, allow_partial: bool = False) -> ir.Server:
    """A project config's server -> IR. Raises `Aborted` with the diagnostics on errors."""
    spec = config.source.spec
    return build_with_inputs(spec, sink, config=config, allow_partial=allow_partial)[0]


def build_cached(
    source: Path | Config,
    sink: DiagnosticSink,
    namespace: str | None = None,
    root: Path | None = None,
    *,
    allow_partial: bool = False,
    memo: Memo | None = None,
) -> ir.Server:
    """`build` or `build_config` for the commands that only report (`mcpmint tools`,
    `validate`, `diff`): a project config's stage cache is read, never written, so what the
    project's last `generate` validated and built is reused. `memo`: the tools to reuse
    instead of the cache's (`diff` builds the new spec with the old one's); the tools built
    are added to its `used`."""
    config = source if isinstance(source, Config) else None
    cache = StageCache(config.folder / CACHE_DIR if config else None)
    spec = config.source.spec if config else source
    assert isinstance(spec, Path)
    return build_with_inputs(
        spec,
        sink,
        namespace,
        root,
        config=config,
        allow_partial=allow_partial,
        cache=cache,
        memo=memo if memo is not None else cache.memo("tools"),
        previous_names=read_previous_lock(config.folder if config else None).names(),
    )[0]


def config_options(config: Config, source: Source | None = None) -> BuildOptions:
    """What `mcpmint.yaml` asks of the frontend for `source` (default: the first one)."""
    source = source or config.source
    return BuildOptions(
        namespace=source.namespace,
        max_tool_name=config.max_tool_name,
        confirmation=config.confirmation,
        include=source.include,
        exclude=source.exclude,
        overrides=source.overrides,
        allow_partial=config.allow_partial,
    )


def build_with_inputs(
    spec: Path,
    sink: DiagnosticSink,
    namespace: str | None = None,
    root: Path | None = None,
    *,
    config: Config | None = None,
    allow_partial: bool = False,
    cache: StageCache | None = None,
    memo: Memo | None = None,
    previous_names: Mapping[str, str] | None = None,
) -> tuple[ir.Server, tuple[Path, ...]]:
    """Like `build`, and also every file that was read (entry first). With a `config`, its
    sources, options and server identity are used (`spec`, `namespace` and `root` are then
    the first source's). `allow_partial` (or the config's `output.allow_partial`) leaves out
    operations that cannot become tools, with warnings, instead of stopping. `cache`: the
    stage cache validation reads and fills; `memo`: the tools to reuse (toolmemo.py);
    `previous_names`: the previous run's tool names (`PreviousLock.names`), kept on a
    collision."""
    with Findings() as findings:
        return _build(
            spec,
            sink,
            findings,
            namespace,
            root,
            config=config,
            allow_partial=allow_partial,
            cache=cache,
            memo=memo,
            previous_names=previous_names,
        )


def _build(
    spec: Path,
    sink: DiagnosticSink,
    findings: Findings,
    namespace: str | None = None,
    root: Path | None = None,
    *,
    config: Config | None = None,
    allow_partial: bool = False,
    cache: StageCache | None = None,
    memo: Memo | None = None,
    previous_names: Mapping[str, str] | None = None,
) -> tuple[ir.Server, tuple[Path, ...]]:
    """`build_with_inputs`, whose documents' validations go into `findings`."""
    options = BuildOptions(namespace=namespace)
    if config is not None:
        options, root = config_options(config), config.source.root
    if allow_partial:
        options = replace(options, allow_partial=True)
    if previous_names:
        options = replace(options, previous_names=previous_names)
    source = config.source if config is not None else None
    server, document = _build_source(spec, sink, findings, options, root, source, cache, memo)
    files = document.files
    specs = [spec_source(document, "", sink)]
    if config is not None and len(config.sources) > 1:  # several sources, one server
        parts = [Part(config.sources[0], server, document)]
        for other in config.sources[1:]:
            other_options = replace(
                config_options(config, other),
                allow_partial=allow_partial,
                previous_names=previous_names or {},
            )
            built, other_document = _build_source(
                other.spec, sink, findings, other_options, other.root, other, cache, memo
            )
            parts.append(Part(other, built, other_document))
            specs.append(spec_source(other_document, built.namespace, sink))
        server = merge_sources(parts, sink)
        _stop_on_errors(sink)
        files = tuple(dict.fromkeys(f for part in parts for f in part.document.files))
    # What the generated tests judge the tools by (render/cases.py): the specs and the policy.
    server = replace(
        server,
        confirmation_policy=options.confirmation,
        specs=tuple(found for found in specs if found is not None),
    )
    if not server.tools and (server.resources or server.prompts or is_manifest(document.data)):
        sink.error(
            document.locate("#/tools") if is_manifest(document.data) else spec.as_posix(),
            "the server has no tools: a generated server needs at least one",
            "add a tool to the manifest (resources and prompts alone are not supported yet)",
        )
        _stop_on_errors(sink)
    if config is not None:
        server = configured(server, document.data, config, sink)
    return server, files


def configured(server: ir.Server, data: Any, config: Config, sink: DiagnosticSink) -> ir.Server:
    """What `mcpmint.yaml` adds to the server built from its spec (whose data is `data`): the
    server's identity, the tool modes and `response_format`, strict schemas."""
    identity = config.server
    server = replace(
        server,
        distribution=identity.name or server.distribution,
        package=identity.package or server.package,
        version=identity.version or server.version,
        instructions=(identity.instructions or "").strip() or server.instructions,
        settings=config.settings,
    )
    server = apply_tools_options(server, data, config.tools, sink)
    _stop_on_errors(sink)
    return strict_server(server) if config.strict_schemas else server


def _build_source(
    spec: Path,
    sink: DiagnosticSink,
    findings: Findings,
    options: BuildOptions,
    root: Path | None,
    source: Source | None,
    cache: StageCache | None,
    memo: Memo | None,
) -> tuple[ir.Server, RawDocument]:
    """One OpenAPI document or tool manifest -> IR (load, build); an OpenAPI document's
    validation is started, into `findings`."""
    document = load_document(spec, sink, root=root)
    _stop_on_errors(sink)
    assert document is not None
    if source is not None and source.kind == "manifest" and not is_manifest(document.data):
        sink.error(
            source.location,
            f"{source.spec_text!r} is not a tool manifest (no mcpmint_manifest: key)",
            "use `spec:` for an OpenAPI document; see docs/manifests.md",
        )
        _stop_on_errors(sink)
    if is_manifest(document.data):  # a tool manifest (docs/manifests.md), not OpenAPI
        server = build_manifest_server(document, options, sink)
    else:
        # Validation (warnings only) goes on beside the build, in a child on a large spec.
        validation = start_validation(document, sink, cache=cache)
        _stop_on_errors(sink)
        assert validation is not None
        findings.add(validation)
        server = build_server(document, validation.version, options, sink, memo)
    _stop_on_errors(sink)
    assert server is not None
    if source is not None and source.resources is not None:  # opt-in resource templates
        server = add_resource_templates(server, source.resources, document, sink)
        _stop_on_errors(sink)
    return server, document


# ------------------------------------------------------------------ models, render, format


@dataclass(frozen=True)
class RenderOptions:
    """What the rendered tree depends on besides the server."""

    spec_file: str  # the spec, relative to the output folder
    # With a run from a spec (not a project config), the scaffold gets a minimal
    # `mcpmint.yaml` naming `spec_file` and `root_file` (the `$ref` root), so that
    # `mcpmint generate` in the output folder rebuilds the same server.
    scaffold_config: bool = True
    root_file: str | None = None
    formatter: Formatter = "ruff"
    large: bool = False  # a large API: the scaffolded config offers dynamic mode
    every_result: bool = True  # typed result models for every tool, or handler tools only


def _render_options(
    server: ir.Server,
    spec: Path,
    output: Path,
    config: Config | None,
    options: GenerateOptions,
    sink: DiagnosticSink,
) -> RenderOptions:
    """How to render `server`, and the warnings about its size (largeapi.py)."""
    if config is not None:  # `output.token_budget`, over what the tool mode lists
        check_budget(server, config.tools, sink)
        _stop_on_errors(sink)
    budget = config is not None and config.tools.token_budget is not None
    every_tool = every_tool_tokens(server)
    all_mode = (server.tool_modes or {}).get("mode", "all") == "all"
    tokens = every_tool if all_mode and not budget else None  # a budget: check_budget measured
    where = (config.path if config else spec).as_posix()
    warn_if_large(len(server.tools), tokens, where, sink, budget=budget, from_spec=config is None)
    root = options.root if config is None else None
    return RenderOptions(
        spec_file=relative(spec, output),
        scaffold_config=config is None,
        root_file=relative(root, output) if root is not None else None,
        formatter="black" if config is not None and config.formatter == "black" else "ruff",
        large=tokens is not None and is_large(tokens),
        every_result=result_models_for(config.result_models if config else "auto", every_tool),
    )


def render_server(
    server: ir.Server,
    options: RenderOptions,
    sink: DiagnosticSink,
    cache: StageCache | None = None,
) -> FileTree:
    """IR -> formatted files in memory (typed models, test cases, templates, the lock).
    Raises `Aborted` on errors."""
    # The typed models and the test cases are made beside the rest, each in a forked child
    # on a large server; dropped if the rest fails: no child outlives the run.
    models = start_models(server, cache, every_result=options.every_result)
    cases = start_cases(server, cache)
    try:
        lock = lock_document(server)
        lock_text = dump(lock)
        tree = render(RenderInputs(server=server, spec_file=options.spec_file))
    except BaseException:
        cases.cancel()
        models.cancel()
        raise
    cases_text, found = cases.result()
    sink.extend(found)
    models_text, found = models.result()
    sink.extend(found)
    _stop_on_errors(sink)
    tree.generated[models_path(server)] = models_file(models_text)
    tree.generated[CASES_PATH] = cases_text
    tree = format_tree(tree, sink, options.formatter, cache)
    _stop_on_errors(sink)
    scaffold = dict(tree.scaffold)
    if options.scaffold_config:
        scaffold[CONFIG_NAMES[0]] = scaffold_text(
            options.spec_file, server.namespace, options.root_file, dynamic=options.large
        )
    return FileTree(
        generated={**tree.generated, LOCK_FILE: lock_text}, scaffold=scaffold, lock=lock
    )


# ------------------------------------------------------------------ write


def write_outputs(
    tree: FileTree,
    files: tuple[Path, ...],
    spec: Path,
    output: Path,
    config: Config | None,
    options: GenerateOptions,
    sink: DiagnosticSink,
    previous: PreviousLock,
) -> WriteReport:
    """The end of a run: the lock compared with the `previous` one (breaking changes stop
    the run unless accepted), the inputs (`files`, every file read) recorded, the files
    written."""
    spec_file = relative(spec, output)
    config_file = relative(config.path, output) if config is not None else None
    if config is None:
        _warn_unused_config(output, tree, sink)
    warn_without_oracle(output, tree.generated, sink)
    assert tree.lock is not None  # render_server keeps the document the lock was written from
    changes = lock_changes(previous, output, sink, tree.generated[LOCK_FILE], tree.lock)
    inputs = inputs_fingerprint(
        spec_file,
        {relative(path, output): file_sha256(path) for path in files},
        run_options(options, config_file),
        generator_identity(),
    )
    if has_breaking(changes) and not options.accept_breaking and not options.check:
        return WriteReport(lock_changes=changes, blocked=True, output=output)
    scaffolded_config = tree.scaffold.get(CONFIG_NAMES[0])
    if config is None and scaffolded_config is not None:
        config_run = run_options(options, CONFIG_NAMES[0])
        inputs = record_from_config(inputs, CONFIG_NAMES[0], scaffolded_config, config_run)
    elif config is not None:
        recorded = recorded_inputs(output)
        if recorded is not None and recorded.get(FROM_CONFIG) == inputs["fingerprint"]:
            inputs = recorded  # the spec run that scaffolded this config: its record holds
    report = write_tree(
        tree, output, check=options.check, force=options.force, sink=sink, inputs=inputs
    )
    report.output = output
    report.lock_changes = changes
    return report


def lock_changes(
    previous: PreviousLock,
    output: Path,
    sink: DiagnosticSink,
    new_text: str,
    new: Mapping[str, Any],
) -> list[Change]:
    """The changes from the `previous` lock of `output` to `new` (whose text is `new_text`):
    none when there was no lock, or it is unreadable (reported as a warning: the write stage
    guards the file itself), or its text is `new_text`."""
    if previous.problem:
        where = str(output / LOCK_FILE)
        sink.warning(
            where, f"previous lock ignored: {previous.problem}", "restore it from version control"
        )
        return []
    if previous.document is None or previous.text == new_text:
        return []
    return diff_locks(previous.document, new)


def _warn_unused_config(output: Path, tree: FileTree, sink: DiagnosticSink) -> None:
    """A run from a spec into a folder whose `mcpmint.yaml` says more than the scaffold."""
    found = find_config(output) if output.is_dir() else None
    if found is None:
        return
    try:
        same = found.read_text(encoding="utf-8") == tree.scaffold.get(found.name)
    except (OSError, UnicodeDecodeError):
        same = False
    if not same:
        sink.warning(
            found.as_posix(),
            "this output folder has its own project config, which a run from a spec ignores",
            f"run `mcpmint generate {found.as_posix()}` (or `mcpmint generate` inside the "
            "folder) to use its selection, overrides and options",
        )


def _stop_on_errors(sink: DiagnosticSink) -> None:
    if sink.has_errors:
        raise Aborted(sink)
