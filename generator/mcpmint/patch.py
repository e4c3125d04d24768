"""A regeneration that patches the previous run's files per tool (issue #8).

When a spec changes inside some path items only (an operation's description, a parameter),
a whole run still walks every tool at every stage: most of a large API's run (GitHub: 1,223
tools, two thirds of the cold time for a one-operation edit). This module makes the same
files from the previous run's files instead: it builds the tools of the changed path items
alone, from a document holding those path items and everything else, and puts each new
tool's text where the old one's was, in the files that hold every tool:

- `tools.json`: the tool's entry, in the `tools` list;
- `tools.lock.json`: the tool's summary, and the lock's `hash`, recomputed from every
  summary's canonical text, which the previous run kept (`lock.summaries_digest`);
- `tests/generated_cases.json`: the tool's call, rejections, `tools/list` digest, and the
  lists over all tools (`unsampled`, `confirmationRequired`), recomputed;
- `REFERENCE.md`: the tool's row;
- the typed models, when a tool's arguments changed structure (a parameter added): its
  arguments class, written again when it is a class alone before and after
  (`models.argument_class`: the same text in any module), laid out by the same formatter.

Every other generated file is the previous run's: it is made from what the patch requires to
be unchanged. The run is a patch only when the result is the whole run's, byte for byte
(tests/test_patch.py compares both on edits of every kind); anything else falls back to the
whole pipeline, which stays the judge:

- the previous run's record (`record`, in the stage cache under its inputs fingerprint), and
  its inputs the same but for the spec's bytes: the same mcpmint, options and project config;
- one spec file, OpenAPI 3.0 or 3.1, whose changes from the one the previous run read are
  inside path items only (the shape of that one, a digest of each path item and one of
  everything else, is kept by the bytes of its file: validateparts.py, validate.py), no path
  item added or removed, and no `$ref` into `#/paths` anywhere (a JSON spec is read by
  `load.load_json_quickly`, whose checks are the whole load's but the nesting of the parts
  the previous run read: the changed path items' is checked here);
- the changed path items' tools the same operations with the same names and operation ids
  (so every other tool keeps its name), none left out (the warning about output schemas cut
  to fit, which counts every tool's, is made again from the record's list and theirs);
- the typed models unchanged but for arguments classes written again: the changed tools'
  results, where results have models, the same structure (`models.structure`), and the token
  estimate that decides a large API's result models and warning on the same side of the line;
- a project config with one OpenAPI source and no `tools` section, selection, resource
  templates or partial runs (each makes the server from every tool);
- every generated file as the previous run wrote it (the manifest's hashes: read and hashed
  in a thread beside the spec's load, `_Beside`), every scaffolded file present: a run that
  would refuse, or scaffold, is the pipeline's.

The validation of the changed path items, the lock's comparison, the inputs record and the
write are the pipeline's own (`pipeline.write_outputs`). What a patched run prints is what the
changed operations report, with the warnings about the whole server (a large API, unsupported
security schemes); the rest of the spec's warnings were printed by the run that made them and
`mcpmint validate` prints them all.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

from . import ir, refs
from .background import Background
from .cache import StageCache, cache_key
from .cases import build_cases
from .config import CONFIG_NAMES, Config, scaffold_text
from .diagnostics import DiagnosticSink
from .format import Formatter, format_texts, formatter_version
from .frontends.manifest import is_manifest
from .frontends.openapi import HTTP_METHODS, BuildOptions, build_server, cut_outputs_warning
from .jsontext import compact
from .largeapi import (
    definition_sizes,
    is_large,
    result_models_for,
    tokens_of,
    warn_if_large,
)
from .load import QuickLoad, RawDocument, load_document, load_json_quickly, too_deep
from .lock import LOCK_FILE, lock_parts, patched_text, spliced, summaries_digest
from .models import argument_class, class_names, plain_imports, structure
from .quickcheck import GenerateOptions, relative, run_options
from .render import (
    REFERENCE,
    FileTree,
    RenderInputs,
    catalog,
    dump_json,
    models_path,
    reference_row_start,
    reference_rows,
    tools_path,
)
from .resources import generator_identity
from .schema import RefGraph, ref_targets
from .textindex import TextIndex
from .validate import (
    DOCUMENT_SHAPE_STAGE,
    FileFindings,
    PendingFindings,
    SpecVersion,
    detect_version,
    document_shape_key,
    findings_of_json_file,
    validate_document,
)
from .validateparts import document_shape, shape_with
from .write import (
    MANIFEST,
    WriteReport,
    file_sha256,
    inputs_fingerprint,
    recorded_inputs,
    safe_relative,
    sha256_each,
)

__all__ = ["STAGE", "Attempt", "Validation", "patched", "record", "record_key"]

STAGE = "patch"
CASES_FILE = "tests/generated_cases.json"
_PATCHED = (LOCK_FILE, CASES_FILE, REFERENCE)  # and tools.json and models.py, in the package
_VERSIONS = ((3, 0), (3, 1))  # validateparts.py keeps the shape of these
# tools.json's layout, searched in its UTF-8 bytes (the markers are ASCII)
_TOOLS_OPEN = b'\n  "tools": [\n'
# The list's end: `upstream`, in every tools.json, sorts right after `tools`, and comes near
# the end of the file, where a search from the end finds it at once (a search for the first
# `\n  ]` after the opening took 0.01-0.02 s of GitHub's 15 MB: every line begins alike).
_TOOLS_CLOSE = b'\n  ],\n  "upstream": {\n'
_ENTRY_LINE = b"\n    {"  # each entry on a line of its own (render.catalog_text)

T = TypeVar("T")


def record(
    server: ir.Server,
    summaries: Mapping[str, str],
    graph: RefGraph | None,
    formatter: Formatter = "ruff",
) -> dict[str, Any]:
    """What the next run needs to patch this run's files: each tool's operation (its
    pointer) with the tool's name and operation id, each tool's `tools/list` size, each
    lock summary's canonical text, the operations whose output schemas were cut, the
    formatter that laid out the code, with its version, and the parts of the spec's
    reference graph (when the build made one)."""
    return {
        "tools": {tool.source: [tool.name, tool.operation_id] for tool in server.tools},
        "sizes": definition_sizes(server),
        "summaries": dict(summaries),
        "cut": list(server.cut_outputs),
        "formatter": formatter_version(formatter),
        **({"graph": graph.parts()} if graph is not None else {}),
    }


def record_key(fingerprint: str) -> str:
    """The stage cache's key of the record of the run whose inputs had `fingerprint`."""
    return cache_key(STAGE, fingerprint)


INDEX_STAGE = "textindex"


def text_index_key(spec: Path) -> str:
    """The stage cache's key of the index of the text last loaded from `spec` (as the loads
    name it): one a spec, replaced by each load that makes one; a load checks the index
    against the text it reads before using it (textindex.py)."""
    return cache_key(INDEX_STAGE, {"file": spec.as_posix()})


@dataclass
class Attempt:
    """What an attempt that fell back leaves for the pipeline, so that it is not done twice:
    the spec, loaded without a word (0.2-0.3 s on GitHub's), and its validation, begun; and
    what the pipeline's build leaves for the record (`record`)."""

    document: RawDocument | None = None
    validation: Validation | None = None
    # The spec's validation begun in the second process before its load (`_begin_findings`),
    # until validation takes it (a patch that ends before that stops it).
    begun: Background[FileFindings | None] | None = None
    # The spec's reference graph, made by the build (the next run's patch reads its parts).
    graph: RefGraph | None = None


@dataclass
class Validation:
    """A document's validation, begun (`validate_document`) into a sink of its own: whoever
    goes on with the run takes it over (`take_over`)."""

    version: SpecVersion  # the document's, as validation detected it
    found: DiagnosticSink = field(default_factory=DiagnosticSink)  # findings made at once
    pending: list[PendingFindings] = field(default_factory=list)  # findings being made

    def take_over(self, sink: DiagnosticSink, deferred: list[PendingFindings]) -> None:
        """The findings go into `sink`, where they would if validation began now; the
        caller joins `deferred` (the run's list of findings being made)."""
        sink.extend(self.found.items)
        for finding in self.pending:
            finding.report_to(sink)
        deferred.extend(self.pending)


def patched(
    source: Path | Config,
    options: GenerateOptions,
    sink: DiagnosticSink,
    cache: StageCache,
    deferred: list[PendingFindings],
    attempt: Attempt | None = None,
    hashed: Mapping[str, str] | None = None,
) -> WriteReport | None:
    """The run's report when the previous run's files could be patched (and were written);
    None, with nothing reported or written, when the whole pipeline must run (`attempt`
    then holds what it may reuse). `hashed`: the inputs' sha256 the quick check took, by
    recorded path (pipeline.generate)."""
    attempt = attempt if attempt is not None else Attempt()
    try:
        return _patch(source, options, sink, cache, deferred, attempt, hashed or {})
    finally:
        if attempt.begun is not None:  # not taken by the validation: stopped
            attempt.begun.cancel()
            attempt.begun = None


def _patch(
    source: Path | Config,
    options: GenerateOptions,
    sink: DiagnosticSink,
    cache: StageCache,
    deferred: list[PendingFindings],
    attempt: Attempt,
    hashed: Mapping[str, str],
) -> WriteReport | None:
    config = source if isinstance(source, Config) else None
    output = options.output or (config.folder if config is not None else None)
    if output is None or options.check or options.force or options.allow_partial:
        return None
    if config is not None and not _plain_config(config):
        return None
    spec = config.source.spec if config is not None else source
    assert isinstance(spec, Path)
    found = _previous_record(spec, config, options, output, cache, hashed)
    if found is None:
        return None
    previous, shas = found
    root = config.source.root if config is not None else options.root
    attempt.begun = _begin_findings(spec, root, cache)  # forked before any thread starts
    reading = _Beside(_current_files, output)
    change = _changed_tools(spec, config, options, cache, previous, shas, attempt, reading)
    current = reading.result()
    if change is None or current is None:
        return None
    sizes = {**previous["sizes"], **definition_sizes(change.server)}
    before, after = tokens_of(list(previous["sizes"].values())), tokens_of(list(sizes.values()))
    policy = config.result_models if config is not None else "auto"
    every_result = result_models_for(policy, after)
    if is_large(before) != is_large(after) or result_models_for(policy, before) != every_result:
        return None  # a large API's result models and scaffolded config would change
    catalog_path = tools_path(change.server)
    old_catalog = current.data.get(catalog_path)
    if old_catalog is None:
        return None  # another package (a namespace changed)
    try:
        patched_catalog = _patched_catalog(old_catalog, change.server, every_result)
    except (ValueError, KeyError, _Unpatchable):
        return None
    if patched_catalog is None:
        return None  # the typed models would change
    catalog_text, rewrites = patched_catalog
    formatter: Formatter = "black" if config is not None and config.formatter == "black" else "ruff"
    if rewrites and previous.get("formatter") != formatter_version(formatter):
        return None  # the models' layout is that formatter's, the same one's
    # The arguments classes, laid out by the formatter's process while the other files are
    # patched here.
    models = models_path(change.server)
    laying_out = (
        _Beside(_patched_models, current.text(models), rewrites, formatter) if rewrites else None
    )
    try:
        tree = _patched_tree(current, change.server, previous, catalog_text, spec, output)
    except (KeyError, ValueError, TypeError, IndexError, _Unpatchable):
        tree = None
    finally:  # the thread ends before anything else happens, whatever happened here
        models_text = laying_out.result() if laying_out is not None else None
    if tree is None:
        return None
    if laying_out is not None:
        if models_text is None:
            return None  # a class that is not one alone, or new imports
        kept = {path: digest for path, digest in tree.kept.items() if path != models}
        tree = replace(tree, generated={**tree.generated, models: models_text}, kept=kept)
    # From here on the run is a patch: what validating and building reported is this run's.
    assert attempt.validation is not None
    attempt.validation.take_over(sink, deferred)
    attempt.validation = None
    cut = _with_every_cut(change, previous)
    sink.extend(change.reported.items)
    if config is None:
        spec_file, root = relative(spec, output), options.root
        root_file = relative(root, output) if root else None
        tree.scaffold[CONFIG_NAMES[0]] = scaffold_text(
            spec_file, change.server.namespace, root_file, dynamic=is_large(after)
        )
    where = (config.path if config is not None else spec).as_posix()
    warn_if_large(len(sizes), after, where, sink, budget=False, from_spec=config is None)
    from .pipeline import write_outputs  # the pipeline imports this module

    read = (spec, config.path) if config is not None else (spec,)
    # The spec's hash in the inputs record is that of the bytes the tools were made of.
    known = {relative(spec, output): change.digest}
    report, inputs = write_outputs(tree, read, spec, output, config, options, sink, deferred, known)
    report.patched = sorted(tool.name for tool in change.server.tools)
    if not report.blocked and not sink.has_errors:
        assert tree.lock_summaries is not None
        new_record = {
            **previous,
            "sizes": sizes,
            "summaries": tree.lock_summaries,
            "graph": change.graph.parts(),
            "cut": cut,
        }
        cache.put(STAGE, record_key(inputs["fingerprint"]), new_record)
    return report


def _plain_config(config: Config) -> bool:
    """A project config whose server is made from each tool alone (see the module's list)."""
    source = config.source
    return (
        len(config.sources) == 1
        and source.kind == "spec"
        and source.include is None
        and source.exclude is None
        and source.resources is None
        and not config.allow_partial
        and not config.tools.location
        and config.tools.token_budget is None
    )


def _previous_record(
    spec: Path,
    config: Config | None,
    options: GenerateOptions,
    output: Path,
    cache: StageCache,
    hashed: Mapping[str, str],
) -> tuple[dict[str, Any], tuple[str, str]] | None:
    """The previous run's record and the sha256 of the spec it read and of the spec now, when
    that run's inputs were this run's but for the spec's bytes (a spec that changed since).
    The spec is not read again when the quick check has just hashed it (`hashed`)."""
    recorded = recorded_inputs(output)
    if recorded is None or not isinstance(recorded.get("files"), dict):
        return None
    spec_file = relative(spec, output)
    config_file = relative(config.path, output) if config is not None else None
    read = dict(recorded["files"])
    if set(read) != {spec_file} | ({config_file} if config_file else set()):
        return None
    now = hashed.get(spec_file) or file_sha256(spec)
    if now == read[spec_file]:
        return None  # the spec is the same: what changed is the pipeline's to find
    if config is not None and config_file is not None:
        read[config_file] = hashed.get(config_file) or file_sha256(config.path)
    again = inputs_fingerprint(
        spec_file, read, run_options(options, config_file), generator_identity()
    )
    if again["fingerprint"] != recorded.get("fingerprint"):
        return None
    found = cache.get(STAGE, record_key(again["fingerprint"]))
    if not (
        isinstance(found, dict)
        and isinstance(found.get("tools"), dict)
        and isinstance(found.get("sizes"), dict)
        and isinstance(found.get("summaries"), dict)
        and isinstance(found.get("cut"), list)
    ):
        return None
    return found, (str(read[spec_file]), now)


@dataclass(frozen=True)
class _Change:
    """The changed path items' tools, built from the rest of the document and them."""

    server: ir.Server  # the changed path items' tools only
    document: RawDocument  # the new document (only in part: `QuickLoad.partial`)
    changed: frozenset[str]  # the changed path items' paths
    reported: DiagnosticSink  # what building the tools reported
    graph: RefGraph  # the reference graph the tools were built with
    digest: str  # the sha256 of the spec's bytes the document was made of
    paths: tuple[str, ...]  # every path item's path, in the document's order


def _changed_tools(
    spec: Path,
    config: Config | None,
    options: GenerateOptions,
    cache: StageCache,
    previous: Mapping[str, Any],
    shas: tuple[str, str],
    attempt: Attempt,
    reading: _Beside[_Current | None],
) -> _Change | None:
    """The changed path items' tools; None when the change is not one a patch can make.
    `reading` is waited for before a second process is forked here (no thread may run then;
    a large JSON spec's was forked before `reading` started: `_begin_findings`)."""
    root = config.source.root if config is not None else options.root
    quiet = DiagnosticSink()
    # A JSON spec is read without the load's walk over every container (0.15 s on GitHub's):
    # the nesting is checked below, on the changed path items; the rest is the previous run's.
    # When it differs from the text the previous load read in path items only, those alone
    # are checked (textindex.py); and only they and what they reach are read
    # (`QuickLoad.partial`) when nothing here needs the rest: the validation is the second
    # process's (which reads all of it), the reference graph's cycles the previous run's.
    index_key = text_index_key(spec)
    previous_index = TextIndex.from_json(cache.get(INDEX_STAGE, index_key))
    partly = attempt.begun is not None and isinstance(previous.get("graph"), dict)
    quick = load_json_quickly(spec, root=root, previous=previous_index, partly=partly)
    if quick is not None:
        document, pointing = quick.document, quick.into_paths
        if quick.index is not None:
            cache.put(INDEX_STAGE, index_key, quick.index.to_json())
    else:
        loaded = load_document(spec, quiet, root=root)
        if loaded is None or quiet.items:
            return None
        document, pointing = loaded, refs.into_paths(ref_targets(loaded.data))
    # The sha256 of the spec the previous run read, and of the bytes this one loaded (those
    # the whole load read: as `_previous_record` found them just before).
    then, now = shas[0], quick.digest if quick is not None else shas[1]
    if now == then:  # the previous run's spec again, since `_previous_record` hashed it
        _hand_over(attempt, document, quick)
        return None
    if len(document.files) != 1 or is_manifest(document.data) or pointing:
        _hand_over(attempt, document, quick)
        return None
    version = detect_version(document, quiet)
    if version is None or quiet.items or (version.major, version.minor) not in _VERSIONS:
        _hand_over(attempt, document, quick)
        return None
    # Validated as a whole run validates it (validateparts.py: the changed path items only),
    # in the second process while this one goes on; a run that falls back takes it over (a
    # document nested too deep is refused by the pipeline's load before that).
    attempt.validation = Validation(version=version)
    reading.result()
    begun = attempt.begun if quick is not None else None  # of the quick load's document
    if begun is not None:
        attempt.begun = None
    validate_document(
        document,
        attempt.validation.found,
        cache=cache,
        deferred=attempt.validation.pending,
        digests=[now],
        begun=begun,
        whole=quick.whole if quick is not None else None,
    )
    # The shape of the document the previous run read (validateparts.document_shape, kept by
    # the validation that read it: the validation of this one may keep this one's next).
    before = cache.get(DOCUMENT_SHAPE_STAGE, document_shape_key(document.files[0], then))
    shape = _shape_by_index(document, quick, previous_index, before, then)
    if shape is None and quick is not None and quick.partial:
        return None  # (the pipeline loads the spec again: a partial document is never its)
    if shape is None:
        shape = document_shape(document.data, finite=document.finite)
    if shape is not None:  # for the next run (validation keeps it too, unless cached)
        cache.put(DOCUMENT_SHAPE_STAGE, document_shape_key(document.files[0], now), shape)
    changed = _changed_paths(before, shape)
    paths = document.data["paths"]
    if changed is None:
        _hand_over(attempt, document, quick)
        return None  # no shape kept, or a change outside the path items, or one added
    if quick is not None and any(too_deep(paths[path], 2) for path in changed):
        return None  # the pipeline's load says where
    if quick is None or not quick.partial:
        attempt.document = document  # the rest's nesting is the previous run's, checked by it
    part = replace(document, data={**document.data, "paths": {p: paths[p] for p in changed}})
    build_options = BuildOptions(namespace=options.namespace)
    if config is not None:
        from .pipeline import config_options

        build_options = config_options(config)
        build_options = replace(build_options, overrides=_overrides_of(build_options, part.data))
    # The reference graph: its cycles and their names are those of every document with the
    # same everything-but-path-items (schema.RefGraph), the previous run's (checked above).
    known = previous.get("graph")
    graph = RefGraph(part.data, known if isinstance(known, dict) else None)
    built = DiagnosticSink()
    server = build_server(part, version, build_options, built, graph)
    if server is None or built.has_errors or server.skipped:
        return None
    if config is not None:
        from .pipeline import configured

        server = configured(server, part.data, config, built)
    places = tuple(refs.join("#/paths", path) + "/" for path in changed)
    old = {s: tuple(v) for s, v in previous["tools"].items() if s.startswith(places)}
    new = {tool.source: (tool.name, tool.operation_id) for tool in server.tools}
    if old != new:
        return None
    assert shape is not None  # (`_changed_paths` found the changed ones in it)
    order = tuple(shape["paths"])
    return _Change(server, document, frozenset(changed), built, graph, now, order)


# A JSON spec this large (some hundreds of path items: validate.BACKGROUND_MIN_PATHS) is
# validated in the second process from the patch's start.
_BEGIN_MIN_BYTES = 1_000_000


def _shape_by_index(
    document: RawDocument,
    quick: QuickLoad | None,
    index: TextIndex | None,
    before: Any,
    then: str,
) -> dict[str, Any] | None:
    """The document's shape made from `before`, the shape of the previous run's spec (whose
    sha256 is `then`), when the load read the document by the index of that very text
    (`QuickLoad.replaced`): everything but the replaced path items is that text's, so only
    those are digested (GitHub: 0.02-0.03 s less). None otherwise, or when path items were
    added, removed or renamed: `document_shape` then digests all of it."""
    if quick is None or quick.replaced is None or index is None or not index.sha256:
        return None
    if index.sha256 != then or not isinstance(before, dict):
        return None
    old = before.get("paths")
    if not isinstance(old, dict) or len(old) != index.members or "rest" not in before:
        return None
    if quick.index is None or list(quick.index.keys) != list(old):
        return None  # path items added, removed, renamed or moved
    replaced = quick.replaced
    keys = list(quick.index.keys[replaced.first - 1 : replaced.last])
    return shape_with(before, document.data["paths"], keys)


def _begin_findings(
    spec: Path, root: Path | None, cache: StageCache
) -> Background[FileFindings | None] | None:
    """The validation of a large JSON spec begun in the second process, forked now, while
    this process loads the spec (validate.findings_of_json_file); None when it is not worth
    it or the process cannot be forked."""
    try:
        if os.path.getsize(spec) < _BEGIN_MIN_BYTES:
            return None
    except OSError:
        return None
    if not os.path.realpath(spec).lower().endswith(".json"):
        return None
    begun = Background(lambda: findings_of_json_file(spec, root, cache), worth_it=True)
    return begun if begun.forked else None


def _hand_over(attempt: Attempt, document: RawDocument, quick: QuickLoad | None) -> None:
    """Leaves `document` for the pipeline (which would load it again otherwise) when it is
    what the whole load makes: a quick load's once the nesting of all of it is checked (and
    never a partial one)."""
    if quick is None or (not quick.partial and not too_deep(document.data, 0)):
        attempt.document = document


def _changed_paths(before: Any, shape: Mapping[str, Any] | None) -> list[str] | None:
    """The path items whose digests differ from the shape `before`, in document order, when
    nothing else does (the rest, the list of paths); None otherwise."""
    if not isinstance(before, dict) or shape is None or before.get("rest") != shape["rest"]:
        return None
    earlier = before.get("paths")
    if not isinstance(earlier, dict) or earlier.keys() != shape["paths"].keys():
        return None
    return [path for path, digest in shape["paths"].items() if earlier[path] != digest]


def _overrides_of(options: BuildOptions, data: Mapping[str, Any]) -> tuple[Any, ...]:
    """The config's overrides that name an operation of `data` (the others name operations
    the patch does not build, which the frontend would call stale)."""
    ids, keys = set(), set()
    for path, item in data["paths"].items():
        if isinstance(item, Mapping):
            for method, operation in item.items():
                if isinstance(operation, Mapping):
                    keys.add(f"{method.upper()} {path}")
                    if isinstance(operation.get("operationId"), str):
                        ids.add(operation["operationId"])

    def names_one(key: str) -> bool:
        method, _, path = key.strip().partition(" ")
        return key in ids or f"{method.upper()} {path.strip()}" in keys

    return tuple(override for override in options.overrides if names_one(override.key))


def _with_every_cut(change: _Change, previous: Mapping[str, Any]) -> list[str]:
    """Every operation whose output schema is cut ("METHOD /path", in document order), and
    the build's warning about them counting every tool's, not the changed ones' only."""
    # In the document's order: by path item, then as HTTP_METHODS lists the methods (every
    # key names an operation there: those of the changed items are this build's).
    paths = {path: index for index, path in enumerate(change.paths)}
    methods = {method.upper(): index for index, method in enumerate(HTTP_METHODS)}

    def place(key: str) -> tuple[int, int]:
        method, _, path = key.partition(" ")
        return paths.get(path, len(paths)), methods.get(method, len(methods))

    kept = (key for key in previous["cut"] if key.split(" ", 1)[1] not in change.changed)
    every = sorted({*kept, *change.server.cut_outputs}, key=place)
    where = change.document.locate("#/paths")
    items = change.reported.items
    if change.server.cut_outputs:  # the build's own warning, about the changed tools only
        own = cut_outputs_warning(change.server.cut_outputs)[0]
        items[:] = [d for d in items if (d.location, d.message) != (where, own)]
    if every:
        change.reported.warning(where, *cut_outputs_warning(every))
    return every


def _patched_tree(
    current: _Current,
    server: ir.Server,
    previous: Mapping[str, Any],
    catalog: bytes,
    spec: Path,
    output: Path,
) -> FileTree | None:
    """The whole tree with the changed tools patched in (`catalog`: `tools.json`'s bytes;
    the typed models, when a class changed, and the project config a spec run scaffolds are
    the caller's); None when a file cannot be patched."""
    cases = _patched_cases(current.data[CASES_FILE], server, previous)
    if cases is None:
        return None
    lock, summaries, lock_data = _patched_lock(current.data[LOCK_FILE], server, previous)
    before = {name: json.loads(previous["summaries"][name]) for name in lock["tools"]}
    made = {
        tools_path(server): catalog,
        LOCK_FILE: lock_data,
        CASES_FILE: cases,
        REFERENCE: _patched_reference(current.text(REFERENCE), server, spec, output),
    }
    # The large files are spliced as bytes, which the write stage takes as they are.
    encoded = {path: data for path, data in made.items() if isinstance(data, bytes)}
    generated = {path: data for path, data in made.items() if isinstance(data, str)}
    kept = {path: digest for path, digest in current.hashes.items() if path not in made}
    return FileTree(
        generated=generated,
        scaffold=dict(current.scaffold),
        lock=lock,
        lock_before={**lock, "tools": before},
        lock_summaries=summaries,
        kept=kept,
        on_disk=current.data,
        encoded=encoded,
    )


class _Unpatchable(Exception):
    """A previous file not laid out as a whole run writes it."""


@dataclass(frozen=True)
class _Current:
    """The previous run's files, as it wrote them."""

    hashes: dict[str, str]  # every generated file's sha256, by path (the manifest's)
    data: dict[str, bytes]  # the bytes of those a patch rewrites
    scaffold: dict[str, str]  # the user-owned files it scaffolded (all present)

    def text(self, path: str) -> str:
        return self.data[path].decode("utf-8")


class _Beside(Generic[T]):
    """`function(*arguments)` run in a thread while this one goes on, for work that lets go
    of the GIL: reading and hashing the previous run's files beside the spec's load (GitHub:
    35 MB, 0.05 s), a formatter's process beside the lock and the cases (0.03-0.04 s).
    `result()` waits for it (and raises what it raised)."""

    def __init__(self, function: Callable[..., T], *arguments: Any) -> None:
        self._outcome: tuple[bool, Any] = (False, None)
        self._thread = threading.Thread(
            target=self._run, args=(function, arguments), name="mcpmint-beside", daemon=True
        )
        self._thread.start()

    def _run(self, function: Callable[..., T], arguments: tuple[Any, ...]) -> None:
        try:
            self._outcome = (True, function(*arguments))
        except BaseException as exc:  # for the caller to raise
            self._outcome = (False, exc)

    def result(self) -> T:
        self._thread.join()
        ok, value = self._outcome
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]


def _current_files(output: Path) -> _Current | None:
    """The generated files as the previous run wrote them (each one's hash the manifest's)
    and the scaffolded files (all present); None otherwise. The texts are those a patch may
    rewrite: `tools.json`, the typed models, the lock, the test cases, REFERENCE.md."""
    try:
        manifest = json.loads((output / MANIFEST).read_text(encoding="utf-8"))
        hashes, scaffolded = manifest["files"], manifest.get("scaffold", [])
        if not isinstance(hashes, dict) or not isinstance(scaffolded, list):
            return None
        listed = [*hashes, *scaffolded]
        if not all(isinstance(path, str) and safe_relative(path) for path in listed):
            return None
        patchable = [
            path
            for path in hashes
            if path in _PATCHED
            or path.endswith(("/_generated/tools.json", "/_generated/models.py"))
        ]
        kept = [path for path in hashes if path not in patchable]
        # Edited by hand, or missing: the pipeline says so.
        if sha256_each([output / path for path in kept]) != [hashes[path] for path in kept]:
            return None
        data: dict[str, bytes] = {}
        for path in patchable:
            data[path] = (output / path).read_bytes()
            if hashlib.sha256(data[path]).hexdigest() != hashes[path]:
                return None  # (so it is the UTF-8 the last run wrote)
        scaffold = {path: (output / path).read_text(encoding="utf-8") for path in scaffolded}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return _Current(dict(hashes), data, scaffold)


def _entry(data: bytes, name: str, start: int, end: int) -> tuple[int, int, dict[str, Any]]:
    """Where the entry of the tool `name` is in a `tools.json`'s tools list (its UTF-8 bytes,
    between `start` and `end`; each entry compact on a line of its own, as
    render.catalog_text writes them), from its `{` to its `}`, and the entry: the one line
    that holds the name as a key's value, once, and holds it as the entry's own name."""
    key = f'"name":{compact(name)}'.encode()
    at = data.find(key, start, end)
    if at < 0 or data.find(key, at + 1, end) >= 0:
        raise _Unpatchable(name)
    first = data.rfind(_ENTRY_LINE, start - 1, at) + len(_ENTRY_LINE) - 1
    last = data.find(b"\n", at, end + 1)
    if first < start or last < 0:
        raise _Unpatchable(name)
    last = last - 1 if data[last - 1 : last] == b"," else last
    entry = json.loads(data[first:last])  # (not orjson: an integer beyond 64 bits stays one)
    if not isinstance(entry, dict) or entry.get("name") != name:
        raise _Unpatchable(name)  # the name is a value inside another tool's entry
    return first, last, entry


@dataclass(frozen=True)
class _Rewrite:
    """A tool's arguments class whose structure changed: its class, in the typed models,
    is written again (`_patched_models`)."""

    name: str  # the class's
    old: Mapping[str, Any]  # the tool's input schema, the previous run's
    new: Mapping[str, Any]  # and this run's


def _patched_catalog(
    data: bytes, server: ir.Server, every_result: bool
) -> tuple[bytes, list[_Rewrite]] | None:
    """`tools.json` (its UTF-8 bytes) with the server's tools' entries replaced, and the
    arguments classes to write again; None when the typed models would change otherwise: the
    structure of a tool's result where it has a result model (`every_result`, or a handler
    tool), or whether it is a handler."""
    start = data.index(_TOOLS_OPEN) + len(_TOOLS_OPEN)
    end = data.rindex(_TOOLS_CLOSE, start)
    spans, rewrites = [], []
    classes = {tool.name: class_names(tool)[0] for tool in server.tools}
    for entry in catalog(server)["tools"]:
        first, last, old = _entry(data, entry["name"], start, end)
        if old.get("handler") != entry.get("handler"):
            return None
        modelled = every_result or entry.get("handler")
        if modelled and structure(old.get("outputSchema")) != structure(entry.get("outputSchema")):
            return None
        if structure(old["inputSchema"]) != structure(entry["inputSchema"]):
            rewrites.append(
                _Rewrite(classes[entry["name"]], old["inputSchema"], entry["inputSchema"])
            )
        spans.append((first, last, compact(entry).encode("utf-8")))
    return spliced(data, spans), rewrites


def _patched_models(text: str, rewrites: list[_Rewrite], formatter: Formatter) -> str | None:
    """The typed models module `text` with each rewritten arguments class in place of the
    old one, when both are a class alone (`models.argument_class`: the same text in any
    module) that import the same names; None otherwise. The classes are laid out by the
    formatter, as the whole run lays out its module (each class the same text alone as in
    the module: the old one, found as it is there, says so)."""
    before, after = [], []
    for rewrite in rewrites:
        old = argument_class(rewrite.name, rewrite.old)
        new = argument_class(rewrite.name, rewrite.new)
        if old is None or new is None:
            return None
        if plain_imports({rewrite.name: old}) != plain_imports({rewrite.name: new}):
            return None  # the module's imports may change
        before.append(old)
        after.append(new)
    laid_out = format_texts([*before, *after], DiagnosticSink(), formatter)
    if laid_out is None:
        return None
    spans = []
    for index, rewrite in enumerate(rewrites):
        # The class is named at its definition and in the `ARGUMENTS` map only: another
        # group's class of that name, merged into it (the same body) or renamed after it
        # (`G<n>`: models.merge_modules), would depend on its text.
        if len(re.findall(rf"\b{re.escape(rewrite.name)}(?:G\d+)?\b", text)) != 2:
            return None
        # A top-level statement follows two blank lines; none is inside a class.
        opening = f"\n\n\nclass {rewrite.name}(BaseModel):\n"
        at = text.find(opening)
        if at < 0 or text.find(opening, at + 1) >= 0:
            return None
        start = at + 3
        end = text.find("\n\n\n", start) + 1
        if end <= 0 or text[start:end] != laid_out[index]:
            return None
        spans.append((start, end, laid_out[len(rewrites) + index]))
    return spliced(text, spans)


def _patched_lock(
    data: bytes, server: ir.Server, previous: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, str], bytes]:
    """The lock's document (its head and the changed tools' summaries: what the comparison
    with the previous lock reads), every summary's canonical text, and its new bytes."""
    new, texts = lock_parts(server)
    summaries = {**previous["summaries"], **texts}
    patched = patched_text(data, new["tools"], summaries_digest(summaries))
    if patched is None:
        raise _Unpatchable(LOCK_FILE)
    new_data, head = patched
    return {**head, "tools": new["tools"]}, summaries, new_data


def _patched_cases(data: bytes, server: ir.Server, previous: Mapping[str, Any]) -> str | None:
    """`generated_cases.json` with the server's tools' cases in place of the old ones."""
    # The standard library's parser: orjson reads an integer beyond 64 bits (a spec's
    # example) as a float, which would be written back as one.
    cases = json.loads(data)
    made = build_cases(server, DiagnosticSink())
    if not made or made["environ"] != cases["environ"]:
        return None
    if made["upstreamOrigin"] != cases["upstreamOrigin"]:
        return None
    names = {tool.name for tool in server.tools}
    for name in names:
        cases["calls"].pop(name, None)
        if name in made["calls"]:
            cases["calls"][name] = made["calls"][name]
        cases["rejections"][name] = made["rejections"][name]
    listed = {entry["name"]: entry for entry in made["toolsList"]}
    if len(listed) != len(names):
        return None
    cases["toolsList"] = [listed.get(entry["name"], entry) for entry in cases["toolsList"]]
    # The server's order of its tools (the record's, in the order the run built them).
    order = {name: index for index, (name, _) in enumerate(previous["tools"].values())}
    unsampled = (set(cases["unsampled"]) - names) | set(made["unsampled"])
    cases["unsampled"] = sorted(unsampled, key=order.__getitem__)
    cases["confirmationRequired"] = sorted(
        name for name, call in cases["calls"].items() if call["confirmation"] == "required"
    )
    return dump_json(cases)


def _patched_reference(text: str, server: ir.Server, spec: Path, output: Path) -> str:
    """`REFERENCE.md` with the server's tools' rows replaced."""
    inputs = RenderInputs(server=server, models="", cases={}, spec_file=relative(spec, output))
    spans = []
    for name, row in reference_rows(inputs).items():
        start = text.index(reference_row_start(name)) + 1
        spans.append((start, text.index("\n", start) + 1, row))
    return spliced(text, spans)
