"""The table of contents: load -> validate -> build IR -> models -> render -> format -> write.

Each stage reports into one `DiagnosticSink`; the run stops after the first stage that
reported an error, before anything is written.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import ir
from .background import second_process, warm_up
from .cache import CACHE_DIR, Memo, StageCache, cache_key
from .cases import build_cases, spec_source, warn_without_oracle
from .config import CONFIG_NAMES, Config, Source, find_config, scaffold_text
from .diagnostics import Aborted, DiagnosticSink
from .format import Formatter, format_tree
from .frontends.manifest import build_manifest_server, is_manifest
from .frontends.openapi import BuildOptions, build_server
from .largeapi import every_tool_tokens, is_large, result_models_for, warn_if_large
from .load import RawDocument, load_document
from .lock import (
    LOCK_FILE,
    Change,
    LockError,
    changes_since,
    diff_locks,
    dump,
    has_breaking,
    lock_parts,
)
from .models import PendingModels
from .models import warm_up as warm_up_models
from .openapi_resources import add_resource_templates
from .patch import INDEX_STAGE, Attempt, patched, text_index_key
from .patch import STAGE as PATCH_STAGE
from .patch import record as patch_record
from .patch import record_key as patch_key

# `GenerateOptions` and `up_to_date` are this module's API too (imported from here).
from .quickcheck import GenerateOptions as GenerateOptions
from .quickcheck import relative, run_options
from .quickcheck import up_to_date as up_to_date
from .render import FileTree, RenderInputs, models_file, models_path, render
from .resources import generator_identity
from .schema import RefGraph
from .sources import Part, merge_sources
from .strict import strict_server
from .toolmemo import reusing_tools
from .toolmodes import apply_tools_options, check_budget
from .validate import PendingFindings, SpecVersion, validate_document
from .write import (
    FROM_CONFIG,
    WriteReport,
    file_sha256,
    inputs_fingerprint,
    record_from_config,
    recorded_inputs,
    write_tree,
)


def _stop_on_errors(sink: DiagnosticSink) -> None:
    if sink.has_errors:
        raise Aborted(sink)


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


def build_quickly(
    source: Path | Config,
    sink: DiagnosticSink,
    namespace: str | None = None,
    root: Path | None = None,
    *,
    allow_partial: bool = False,
    memo: Memo | None = None,
) -> ir.Server:
    """`build` or `build_config` for the commands that only report (`mcpmint tools`,
    `validate`, `diff`): the same server and diagnostics, sooner. The spec is validated in the
    second process while this one builds, as `generate` does; and a project config's stage
    cache is read (never written: these commands write nothing), so what the project's last
    `generate` validated and built is reused (GitHub: 3.3-3.9 s -> about a regeneration's
    time). `memo`: the tools to reuse instead of the cache's (`diff` builds the new spec with
    what the old one's build made); the tools built are added to its `used`."""
    deferred: list[PendingFindings] = []
    cache = StageCache(source.folder / CACHE_DIR if isinstance(source, Config) else None)
    config = source if isinstance(source, Config) else None
    spec = source.source.spec if isinstance(source, Config) else source
    with second_process(), reusing_tools(memo if memo is not None else _memo(cache, "tools")):
        try:
            return build_with_inputs(
                spec,
                sink,
                namespace,
                root,
                config=config,
                allow_partial=allow_partial,
                cache=cache,
                deferred=deferred,
            )[0]
        finally:  # also on Aborted: the validation warnings belong with the errors
            _join(deferred)


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
    deferred: list[PendingFindings] | None = None,
    attempt: Attempt | None = None,
) -> tuple[ir.Server, tuple[Path, ...]]:
    """Like `build`, and also every file that was read (entry first). With a `config`, its
    one source, options and server identity are used (and `spec`, `namespace` and `root`
    must be the source's). `allow_partial` (or the config's `output.allow_partial`) leaves
    out operations that cannot become tools, with warnings, instead of stopping.
    `cache` and `deferred` are passed to `validate_document`: the caller joins `deferred`.
    `attempt`: what a patch that fell back did already with `spec` (patch.py)."""
    options = BuildOptions(namespace=namespace)
    if config is not None:
        options, root = config_options(config), config.source.root
    if allow_partial:
        options = replace(options, allow_partial=True)
    source = config.source if config is not None else None
    server, document = _build_source(spec, sink, options, root, source, cache, deferred, attempt)
    files = document.files
    specs = [spec_source(document, "", sink)]
    if config is not None and len(config.sources) > 1:  # several sources, one server
        parts = [Part(config.sources[0], server, document)]
        for other in config.sources[1:]:
            other_options = replace(config_options(config, other), allow_partial=allow_partial)
            built, other_document = _build_source(
                other.spec, sink, other_options, other.root, other, cache, deferred
            )
            parts.append(Part(other, built, other_document))
            specs.append(spec_source(other_document, built.namespace, sink))
        server = merge_sources(parts, sink)
        _stop_on_errors(sink)
        files = tuple(dict.fromkeys(f for part in parts for f in part.document.files))
    # What the generated tests judge the tools by (cases.py): the specs and the policy.
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
    options: BuildOptions,
    root: Path | None,
    source: Source | None,
    cache: StageCache | None = None,
    deferred: list[PendingFindings] | None = None,
    attempt: Attempt | None = None,
) -> tuple[ir.Server, RawDocument]:
    """One OpenAPI document or tool manifest -> IR (load, validate, build). `attempt`: what
    a patch that fell back did already with `spec` (patch.py): loaded it, began validating."""
    attempt = attempt or Attempt()
    document = attempt.document or load_document(spec, sink, root=root)
    attempt.document = document  # held with the attempt (`generate`'s `held`)
    _stop_on_errors(sink)
    assert document is not None
    if cache is not None and document.text_index is not None:  # for a patched run's load
        cache.put(INDEX_STAGE, text_index_key(document.files[0]), document.text_index.to_json())
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
        waiting = len(deferred) if deferred is not None else 0
        version: SpecVersion | None
        if attempt.validation is not None and deferred is not None:
            attempt.validation.take_over(sink, deferred)
            version = attempt.validation.version
        else:
            version = validate_document(document, sink, cache=cache, deferred=deferred)
        if deferred is not None and len(deferred) > waiting:
            # Validated in the second process: it readies the typed models' library next,
            # while this process builds the tools (a large spec's models are made there).
            warm_up(warm_up_models)
        _stop_on_errors(sink)
        assert version is not None
        # Made here to be kept: a patched next run reads its parts (patch.py).
        graph = RefGraph(document.data) if version.family != "swagger" else None
        attempt.graph = graph
        server = build_server(document, version, options, sink, graph)
    _stop_on_errors(sink)
    assert server is not None
    if source is not None and source.resources is not None:  # opt-in resource templates
        server = add_resource_templates(server, source.resources, document, sink)
        _stop_on_errors(sink)
    return server, document


def render_server(
    server: ir.Server,
    spec_file: str,
    sink: DiagnosticSink,
    *,
    config: bool = True,
    root_file: str | None = None,
    formatter: Formatter = "ruff",
    large: bool = False,
    every_result: bool = True,
    cache: StageCache | None = None,
) -> FileTree:
    """IR -> formatted files in memory. Raises `Aborted` on errors.

    With `config` (a run from a spec, not from a project config), the scaffold includes a
    minimal `mcpmint.yaml` naming `spec_file` (and `root_file`, the `$ref` root), both
    relative to the output folder, so that `mcpmint generate` there rebuilds the same server.
    `every_result`: typed result models for every tool, or for handler tools only.
    """
    # The typed models take seconds on a large server: the second process makes them while
    # this one renders the rest, then both (models.PendingModels); their file goes in last.
    pending = PendingModels(server, cache, every_result=every_result)
    try:
        cases = build_cases(server, sink)
        if not sink.has_errors:
            lock, summaries = lock_parts(server)
            lock_file = dump(lock)
            tree = render(RenderInputs(server=server, models="", cases=cases, spec_file=spec_file))
    finally:
        models = pending.join(sink)
    _stop_on_errors(sink)
    tree.generated[models_path(server)] = models_file(models)
    tree = format_tree(tree, sink, formatter, cache)
    _stop_on_errors(sink)
    scaffold = dict(tree.scaffold)
    if config:
        scaffold[CONFIG_NAMES[0]] = scaffold_text(
            spec_file, server.namespace, root_file, dynamic=large
        )
    return FileTree(
        generated={**tree.generated, LOCK_FILE: lock_file},
        scaffold=scaffold,
        lock=lock,
        lock_summaries=summaries,
    )


def lock_changes(
    output: Path, sink: DiagnosticSink, new_text: str, new: Mapping[str, Any]
) -> list[Change]:
    """The changes from the output folder's current `tools.lock.json` to `new` (whose text is
    `new_text`): none when there is no lock, or it is unreadable (reported as a warning: the
    write stage guards the file itself), or its text is `new_text` (15 MB of JSON not parsed
    and compared on a GitHub run that changes nothing)."""
    path = output / LOCK_FILE
    if not path.is_file():
        return []
    try:
        text = path.read_text(encoding="utf-8")
        return [] if text == new_text else changes_since(text, new_text, new)
    except (OSError, UnicodeDecodeError, LockError) as exc:
        sink.warning(str(path), f"previous lock ignored: {exc}", "restore it from version control")
        return []


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


def generate(
    spec: Path | Config,
    options: GenerateOptions,
    sink: DiagnosticSink,
    *,
    quick_checked: bool = False,
    hashed: Mapping[str, str] | None = None,
    held: list[Any] | None = None,
) -> WriteReport:
    """The whole pipeline, from a spec or from a project config (`mcpmint.yaml`, whose
    folder is the default output folder). Raises `Aborted` (nothing written) when a stage
    before writing reports an error; refusals to overwrite come back in the report (and the
    sink), and so do the changes to the tool surface: with breaking ones and no
    `accept_breaking`, nothing is written and the report is `blocked`.

    A run whose inputs fingerprint and generated files are unchanged (and, when it writes,
    whose scaffolded files are all there, the project config a spec run scaffolded unedited)
    returns at once (`report.quick`), without loading the spec: it would write nothing.
    `quick_checked`: the caller has asked `up_to_date` already, and it said no (the files are
    not hashed twice); `hashed`: the sha256 of the input files it hashed, by path as the
    inputs record names them (relative to the output folder), which a patched run then does
    not read again (the spec: 0.01-0.02 s of GitHub's). `held`: where the run leaves its
    largest objects (the spec's data, the server) for a caller that ends its process without
    freeing them (the command line, cli.entry), instead of freeing them object by object as
    the run's functions return (0.03-0.04 s of a patched GitHub run, measured); a patched
    run's objects are frozen too (`gc.freeze`: no collection scans them again).
    """
    config = spec if isinstance(spec, Config) else None
    if not quick_checked:
        checked: dict[str, str] = {}
        if up_to_date(spec, options, checked):
            report = WriteReport(quick=True)
            report.output = options.output or (config.folder if config else None)
            return report
        hashed = checked
    # The stage cache (cache.py) in the output folder; when that folder is named after the
    # server, it is known only once the spec is built, and `_generate` sets it then.
    folder = options.output or (config.folder if config else None)
    cache = StageCache(folder / CACHE_DIR if folder is not None else None)
    deferred: list[PendingFindings] = []  # validation running beside the other stages
    # Validation, then the typed models (background.py); a process that ends with the run
    # does not wait for the second one to end.
    with second_process(wait=held is None):
        try:
            with rare_collections():
                report = _generate(spec, config, options, sink, cache, deferred, held, hashed)
        finally:  # also on Aborted: the validation warnings belong with the errors
            _join(deferred)
    if _written(report, options, sink):
        cache.save()
    return report


@contextmanager
def rare_collections() -> Iterator[None]:
    """Python's cyclic garbage collector, run rarely inside the block.

    A run on a large spec makes millions of small dicts and lists (schemas, JSON text) that
    live until it ends and hold almost no reference cycles; with the default thresholds the
    collector scans them all again and again: a quarter of a warm GitHub run (3.5 s -> 2.7 s)
    and 0.6 s of a cold one, measured. Fewer collections cost about 30-50 MB of peak memory
    there. The thresholds are restored after the block (also in a process that imported
    mcpmint as a library).
    """
    previous = gc.get_threshold()
    gc.set_threshold(100_000, 50, 1_000)
    try:
        yield
    finally:
        gc.set_threshold(*previous)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off inside the block, on again after it if it was.

    A patched run (patch.py) makes a large spec's million objects, keeps them all, makes
    almost no reference cycle, and ends: its young-generation collections scanned them for
    nothing, 0.07 s of a patched GitHub run (0.81 -> 0.73 s, medians of eight runs, alternately).
    A patch that falls back hands the pipeline its objects with the collector as it was.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _generate(
    spec: Path | Config,
    config: Config | None,
    options: GenerateOptions,
    sink: DiagnosticSink,
    cache: StageCache,
    deferred: list[PendingFindings],
    held: list[Any] | None = None,
    hashed: Mapping[str, str] | None = None,
) -> WriteReport:
    # A spec changed in some operations only: the previous run's files, patched (patch.py).
    attempt = Attempt()
    if held is not None:
        held.append(attempt)
    with collector_paused():
        report = patched(spec, options, sink, cache, deferred, attempt, hashed)
        if report is not None and held is not None:
            # The process ends with the run: the objects the patch made are left out of the
            # collections to come, the first of which (at the next allocation, once the
            # collector is on again) would scan them all (0.02-0.03 s of a patched GitHub run).
            gc.freeze()
    if report is not None:
        return report
    # Tools whose inputs did not change are the previous run's (toolmemo.py), and so is
    # what later stages make from each of them alone: a run builds only what changed.
    memo = _memo(cache, "tools")
    with reusing_tools(memo):
        server, files, spec_path, output = _build(
            spec, config, options, sink, cache, deferred, attempt
        )
        if held is not None:
            held.append(server)
        if cache.folder is None:
            cache.folder = output / CACHE_DIR
        report = _render_and_write(
            server, files, spec_path, output, config, options, sink, cache, deferred, attempt
        )
    if memo.missed or memo.used.keys() != memo.previous.keys():
        cache.put("tools", cache_key("tools", "memo"), memo.used)
    return report


def _join(deferred: list[PendingFindings]) -> None:
    """Wait for the validation findings (a second process may be computing them)."""
    for pending in reversed(deferred):  # the later one first: earlier indexes stay valid
        pending.join()
    deferred.clear()


def _memo(cache: StageCache, stage: str) -> Memo:
    """The previous run's memo of `stage` from the stage cache (empty when there is none)."""
    previous = cache.get(stage, cache_key(stage, "memo"))
    return Memo(previous if isinstance(previous, dict) else {})


def _build(
    spec: Path | Config,
    config: Config | None,
    options: GenerateOptions,
    sink: DiagnosticSink,
    cache: StageCache,
    deferred: list[PendingFindings],
    attempt: Attempt | None = None,
) -> tuple[ir.Server, tuple[Path, ...], Path, Path]:
    """Load, validate and build: the server, the files read, the spec and the output
    folder. `attempt`: what a patch that fell back did already (patch.py)."""
    if config is not None:
        spec_path = config.source.spec
        server, files = build_with_inputs(
            spec_path,
            sink,
            config=config,
            allow_partial=options.allow_partial,
            cache=cache,
            deferred=deferred,
            attempt=attempt,
        )
        output = options.output or config.folder
        files = (*files, config.path)
    else:
        assert isinstance(spec, Path)
        spec_path = spec
        server, files = build_with_inputs(
            spec,
            sink,
            options.namespace,
            options.root,
            allow_partial=options.allow_partial,
            cache=cache,
            deferred=deferred,
            attempt=attempt,
        )
        output = options.output or Path(server.distribution)
    return server, files, spec_path, output


def _render_and_write(
    server: ir.Server,
    files: tuple[Path, ...],
    spec_path: Path,
    output: Path,
    config: Config | None,
    options: GenerateOptions,
    sink: DiagnosticSink,
    cache: StageCache,
    deferred: list[PendingFindings],
    attempt: Attempt,
) -> WriteReport:
    spec_file = relative(spec_path, output)
    root_file = relative(options.root, output) if options.root and config is None else None
    if config is not None:  # `output.token_budget`, over what the tool mode lists
        check_budget(server, config.tools, sink)
        _stop_on_errors(sink)
    formatter: Formatter = "black" if config is not None and config.formatter == "black" else "ruff"
    # Large APIs (largeapi.py): a warning in all mode, dynamic mode in a new mcpmint.yaml,
    # result models for handler tools only unless asked for.
    budget = config is not None and config.tools.token_budget is not None
    every_tool = every_tool_tokens(server)
    all_mode = (server.tool_modes or {}).get("mode", "all") == "all"
    tokens = every_tool if all_mode and not budget else None  # a budget: check_budget measured
    where = (config.path if config else spec_path).as_posix()
    warn_if_large(len(server.tools), tokens, where, sink, budget=budget, from_spec=config is None)
    large = tokens is not None and is_large(tokens)
    every_result = result_models_for(config.result_models if config else "auto", every_tool)
    tree = render_server(
        server,
        spec_file,
        sink,
        config=config is None,
        root_file=root_file,
        formatter=formatter,
        large=large,
        every_result=every_result,
        cache=cache,
    )
    report, inputs = write_outputs(tree, files, spec_path, output, config, options, sink, deferred)
    if tree.lock_summaries is not None and _written(report, options, sink):
        # What the next run needs to patch this one's outputs per tool (patch.py).
        record = patch_record(server, tree.lock_summaries, attempt.graph, formatter)
        cache.put(PATCH_STAGE, patch_key(inputs["fingerprint"]), record)
    return report


def _written(report: WriteReport, options: GenerateOptions, sink: DiagnosticSink) -> bool:
    """A run that wrote its whole tree (or found it up to date)."""
    return not options.check and not report.blocked and not sink.has_errors


def write_outputs(
    tree: FileTree,
    files: tuple[Path, ...],
    spec_path: Path,
    output: Path,
    config: Config | None,
    options: GenerateOptions,
    sink: DiagnosticSink,
    deferred: list[PendingFindings],
    hashed: Mapping[str, str] | None = None,
) -> tuple[WriteReport, dict[str, Any]]:
    """The end of a run, once its files are made (`tree`; also a patched run's, patch.py):
    the lock compared with the previous one (breaking changes stop the run unless accepted),
    the inputs recorded, the files written and the validation joined. The report, and the
    inputs record the manifest holds. `hashed`: the sha256 of input files known already, by
    path as the inputs record names them (as `generate`'s; a patched run's spec, from the
    bytes it loaded), which are not read again."""
    spec_file = relative(spec_path, output)
    config_file = relative(config.path, output) if config is not None else None
    known = hashed or {}
    read = {relative(path, output): path for path in files}
    _stop_on_errors(sink)
    if config is None:
        _warn_unused_config(output, tree, sink)
    warn_without_oracle(output, tree.generated, sink)
    assert tree.lock is not None  # render_server keeps the document the lock was written from
    if tree.lock_before is not None:  # a patched run's: the other tools are the same text
        changes = diff_locks(tree.lock_before, tree.lock)
    else:
        changes = lock_changes(output, sink, tree.generated[LOCK_FILE], tree.lock)
    inputs = inputs_fingerprint(
        spec_file,
        {name: known.get(name) or file_sha256(path) for name, path in read.items()},
        run_options(options, config_file),
        generator_identity(),
    )
    if has_breaking(changes) and not options.accept_breaking and not options.check:
        report = WriteReport(lock_changes=changes, blocked=True)
        report.output = output
        return report, inputs
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
    # Validation findings are warnings only (validate.py): they cannot stop the run, so the
    # second process finishes them while this one writes (0.13 s of a patched GitHub run
    # waited for them before the writes). They take their place in the sink all the same.
    _join(deferred)
    return report, inputs
