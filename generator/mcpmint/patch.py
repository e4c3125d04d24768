"""A regeneration that patches the previous run's files per tool (issue #8).

When a spec changes inside some path items only (an operation's description, a parameter),
a whole run still walks every tool at every stage: most of a large API's run (GitHub: 1,223
tools, two thirds of the cold time for a one-operation edit). This module makes the same
files from the previous run's files instead: it builds the tools of the changed path items
alone, from a document holding those path items and everything else, and puts each new
tool's text where the old one's was, in the four files that hold every tool:

- `tools.json`: the tool's entry, in the `tools` list;
- `tools.lock.json`: the tool's summary, and the lock's `hash`, recomputed from every
  summary's canonical text, which the previous run kept (`lock.summaries_digest`);
- `tests/generated_cases.json`: the tool's call, rejections, `tools/list` digest, and the
  lists over all tools (`unsampled`, `confirmationRequired`), recomputed;
- `REFERENCE.md`: the tool's row.

Every other generated file is the previous run's: it is made from what the patch requires to
be unchanged. The run is a patch only when the result is the whole run's, byte for byte
(tests/test_patch.py compares both on edits of every kind); anything else falls back to the
whole pipeline, which stays the judge:

- the previous run's record (`record`, in the stage cache under its inputs fingerprint), and
  its inputs the same but for the spec's bytes: the same mcpmint, options and project config;
- one spec file, OpenAPI 3.0 or 3.1, clean when last validated (its shape is kept then:
  validateparts.py), whose changes are inside path items only (everything else has the same
  digest), no path item added or removed, and no `$ref` into `#/paths` anywhere;
- the changed path items' tools the same operations with the same names and operation ids
  (so every other tool keeps its name), none left out, none with an output schema cut;
- the typed models unchanged: the changed tools' input and output schemas are the same, and
  the token estimate that decides a large API's result models and warning did not cross the
  line;
- a project config with one OpenAPI source and no `tools` section, selection, resource
  templates or partial runs (each makes the server from every tool);
- every generated file as the previous run wrote it (the manifest's hashes), every
  scaffolded file present: a run that would refuse, or scaffold, is the pipeline's.

The validation of the changed path items, the lock's comparison, the inputs record and the
write are the pipeline's own (`pipeline.write_outputs`). What a patched run prints is what the
changed operations report, with the warnings about the whole server (a large API, unsupported
security schemes); the rest of the spec's warnings were printed by the run that made them and
`mcpmint validate` prints them all.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from . import ir, refs
from .cache import StageCache, cache_key
from .cases import build_cases
from .config import CONFIG_NAMES, Config, scaffold_text
from .diagnostics import DiagnosticSink
from .frontends.manifest import is_manifest
from .frontends.openapi import BuildOptions, build_server
from .jsontext import compact, pretty
from .largeapi import (
    definition_sizes,
    is_large,
    result_models_for,
    tokens_of,
    warn_if_large,
)
from .load import RawDocument, load_document
from .lock import LOCK_FILE, lock_parts, parse_lock, summaries_digest
from .models import structure
from .quickcheck import GenerateOptions, relative, run_options
from .render import (
    REFERENCE,
    FileTree,
    RenderInputs,
    catalog,
    dump_json,
    reference_row_start,
    reference_rows,
    tools_path,
)
from .resources import generator_identity
from .validate import SHAPE_STAGE, PendingFindings, detect_version, shape_key, validate_document
from .validateparts import changed_paths, document_shape
from .write import MANIFEST, WriteReport, file_sha256, inputs_fingerprint, recorded_inputs

__all__ = ["STAGE", "patched", "record", "record_key"]

STAGE = "patch"
CASES_FILE = "tests/generated_cases.json"
_TOOLS_OPEN = '\n  "tools": [\n'
_ENTRY_OPEN = "\n    {\n"
_ENTRY_CLOSE = "\n    }"


def record(server: ir.Server, summaries: Mapping[str, str]) -> dict[str, Any]:
    """What the next run needs to patch this run's files: each tool's operation (its
    pointer) with the tool's name and operation id, each tool's `tools/list` size, and each
    lock summary's canonical text."""
    return {
        "tools": {tool.source: [tool.name, tool.operation_id] for tool in server.tools},
        "sizes": definition_sizes(server),
        "summaries": dict(summaries),
    }


def record_key(fingerprint: str) -> str:
    """The stage cache's key of the record of the run whose inputs had `fingerprint`."""
    return cache_key(STAGE, fingerprint)


def patched(
    source: Path | Config,
    options: GenerateOptions,
    sink: DiagnosticSink,
    cache: StageCache,
    deferred: list[PendingFindings],
) -> WriteReport | None:
    """The run's report when the previous run's files could be patched (and were written);
    None, with nothing reported or written, when the whole pipeline must run."""
    config = source if isinstance(source, Config) else None
    output = options.output or (config.folder if config is not None else None)
    if output is None or options.check or options.force or options.allow_partial:
        return None
    if config is not None and not _plain_config(config):
        return None
    spec = config.source.spec if config is not None else source
    assert isinstance(spec, Path)
    previous = _previous_record(spec, config, options, output, cache)
    if previous is None:
        return None
    change = _changed_tools(spec, config, options, cache, previous)
    if change is None:
        return None
    server, document, built_sink = change
    files = _patched_files(output, server, previous, config, options, spec)
    if files is None:
        return None
    tree, new_record, count, tokens = files
    # From here on the run is a patch: what the build reported is this run's.
    sink.extend(built_sink.items)
    if config is None or config.tools.token_budget is None:
        where = (config.path if config is not None else spec).as_posix()
        warn_if_large(count, tokens, where, sink, budget=False, from_spec=config is None)
    # The changed path items are validated as a whole run would (validateparts.py).
    validate_document(document, sink, cache=cache, deferred=deferred)
    from .pipeline import write_outputs  # the pipeline imports this module

    inputs_files = (spec, config.path) if config is not None else (spec,)
    report, inputs = write_outputs(
        tree, inputs_files, spec, output, config, options, sink, deferred
    )
    report.patched = sorted(tool.name for tool in server.tools)
    if not report.blocked and not sink.has_errors:
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
    spec: Path, config: Config | None, options: GenerateOptions, output: Path, cache: StageCache
) -> dict[str, Any] | None:
    """The previous run's record, when that run's inputs were this run's but for the spec's
    bytes (a spec that changed since)."""
    recorded = recorded_inputs(output)
    if recorded is None or not isinstance(recorded.get("files"), dict):
        return None
    spec_file = relative(spec, output)
    config_file = relative(config.path, output) if config is not None else None
    read = dict(recorded["files"])
    if set(read) != {spec_file} | ({config_file} if config_file else set()):
        return None
    if file_sha256(spec) == read[spec_file]:
        return None  # the spec is the same: what changed is the pipeline's to find
    if config is not None and config_file is not None:
        read[config_file] = file_sha256(config.path)
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
    ):
        return None
    return found


def _changed_tools(
    spec: Path,
    config: Config | None,
    options: GenerateOptions,
    cache: StageCache,
    previous: Mapping[str, Any],
) -> tuple[ir.Server, RawDocument, DiagnosticSink] | None:
    """The server of the changed path items' tools (the rest of the document with them), the
    document, and what building reported; None when the change is not one a patch can
    make."""
    quiet = DiagnosticSink()
    root = config.source.root if config is not None else options.root
    document = load_document(spec, quiet, root=root)
    if document is None or quiet.items or len(document.files) != 1:
        return None
    if is_manifest(document.data) or b"#/paths" in spec.read_bytes():
        return None
    version = detect_version(document, quiet)
    if version is None or quiet.items:
        return None
    before = cache.get(SHAPE_STAGE, shape_key(document, version))
    shape = document_shape(document.data)
    changed = changed_paths(before, shape, document.data)
    if changed is None or shape is None or not isinstance(before, dict):
        return None
    if set(shape["paths"]) != set(before["paths"]):  # a path item added or removed
        return None
    paths = document.data["paths"]
    part = replace(document, data={**document.data, "paths": {p: paths[p] for p in changed}})
    build_options = BuildOptions(namespace=options.namespace)
    if config is not None:
        from .pipeline import config_options

        build_options = config_options(config)
        build_options = replace(build_options, overrides=_overrides_of(build_options, part.data))
    built = DiagnosticSink()
    server = build_server(part, version, build_options, built)
    if server is None or built.has_errors or server.skipped or _cut(built):
        return None
    if config is not None:
        from .pipeline import configured

        server = configured(server, part.data, config, built)
    places = tuple(refs.join("#/paths", path) + "/" for path in changed)
    old = {s: tuple(v) for s, v in previous["tools"].items() if s.startswith(places)}
    new = {tool.source: (tool.name, tool.operation_id) for tool in server.tools}
    if old != new:
        return None
    return server, document, built


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


def _cut(sink: DiagnosticSink) -> bool:
    """The build cut an output schema: its warning counts every tool's."""
    return any("output schemas are larger than" in item.message for item in sink.items)


def _patched_files(
    output: Path,
    server: ir.Server,
    previous: Mapping[str, Any],
    config: Config | None,
    options: GenerateOptions,
    spec: Path,
) -> tuple[FileTree, dict[str, Any], int, int | None] | None:
    """The whole tree with the changed tools patched in, the record of this run, and the
    count and token estimate of all tools (None: not measured, as a whole run would not);
    None when the previous files cannot be patched."""
    sizes = dict(previous["sizes"])
    new_sizes = definition_sizes(server)
    policy = config.result_models if config is not None else "auto"
    before, after = tokens_of(list(sizes.values())), 0
    sizes.update(new_sizes)
    after = tokens_of(list(sizes.values()))
    if is_large(before) != is_large(after):
        return None
    if result_models_for(policy, before) != result_models_for(policy, after):
        return None
    current = _current_files(output)
    if current is None:
        return None
    generated, scaffold = current
    try:
        catalog_path = tools_path(server)
        texts = {
            catalog_path: _patched_catalog(
                generated[catalog_path], server, result_models_for(policy, after)
            ),
            LOCK_FILE: None,
            CASES_FILE: _patched_cases(generated[CASES_FILE], server, previous),
            REFERENCE: _patched_reference(generated[REFERENCE], server, options, spec, output),
        }
        lock, summaries, lock_text = _patched_lock(generated[LOCK_FILE], server, previous)
    except (KeyError, ValueError, TypeError, IndexError, _Unpatchable):
        return None
    if texts[catalog_path] is None or texts[CASES_FILE] is None:
        return None
    texts[LOCK_FILE] = lock_text
    generated.update({path: text for path, text in texts.items() if text is not None})
    if config is None:
        spec_file = relative(spec, output)
        root_file = relative(options.root, output) if options.root else None
        scaffold[CONFIG_NAMES[0]] = scaffold_text(
            spec_file, server.namespace, root_file, dynamic=is_large(after)
        )
    tree = FileTree(generated=generated, scaffold=scaffold, lock=lock, lock_summaries=summaries)
    new_record = {
        "tools": previous["tools"],
        "sizes": sizes,
        "summaries": summaries,
    }
    return tree, new_record, len(sizes), after


class _Unpatchable(Exception):
    """A previous file not laid out as a whole run writes it."""


def _current_files(output: Path) -> tuple[dict[str, str], dict[str, str]] | None:
    """The generated files as the previous run wrote them (each one's hash the manifest's)
    and the scaffolded files (all present); None otherwise."""
    try:
        manifest = json.loads((output / MANIFEST).read_text(encoding="utf-8"))
        hashes, scaffolded = manifest["files"], manifest.get("scaffold", [])
        if not isinstance(hashes, dict) or not isinstance(scaffolded, list):
            return None
        generated: dict[str, str] = {}
        for path, digest in hashes.items():
            data = (output / path).read_bytes()
            if hashlib.sha256(data).hexdigest() != digest:
                return None
            generated[path] = data.decode("utf-8")
        scaffold = {path: (output / path).read_text(encoding="utf-8") for path in scaffolded}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return generated, scaffold


def _entry_span(text: str, name: str, start: int, end: int) -> tuple[int, int]:
    """Where the entry of the tool `name` is in a `tools.json` text's tools list (between
    `start` and `end`): from its `{` to its `}`."""
    key = f'\n      "name": {compact(name)},\n'
    at = text.find(key, start, end)
    if at < 0 or text.find(key, at + 1, end) >= 0:
        raise _Unpatchable(name)
    first = text.rfind(_ENTRY_OPEN, start - 1, at) + len(_ENTRY_OPEN) - 2
    last = text.find(_ENTRY_CLOSE, at, end) + len(_ENTRY_CLOSE)
    if first < start - 1 or last < len(_ENTRY_CLOSE):
        raise _Unpatchable(name)
    return first, last


def _indented(value: Any, spaces: int) -> str:
    """`value`'s pretty JSON text as it is laid out `spaces` deep in a larger one."""
    return pretty(value).replace("\n", "\n" + " " * spaces)


def _replaced(text: str, spans: list[tuple[int, int, str]]) -> str:
    """`text` with each (start, end) stretch replaced by its new text."""
    parts, at = [], 0
    for start, end, new in sorted(spans):
        if start < at:
            raise _Unpatchable("overlapping stretches")
        parts += [text[at:start], new]
        at = end
    parts.append(text[at:])
    return "".join(parts)


def _patched_catalog(text: str, server: ir.Server, every_result: bool) -> str | None:
    """`tools.json` with the server's tools' entries replaced; None when the typed models
    would change: the structure of a tool's arguments, or of its result where it has a
    result model (`every_result`, or a handler tool), or whether it is a handler."""
    start = text.index(_TOOLS_OPEN) + len(_TOOLS_OPEN)
    end = text.index("\n  ]", start)
    spans = []
    for entry in catalog(server)["tools"]:
        first, last = _entry_span(text, entry["name"], start, end)
        old = orjson.loads(text[first:last])
        if old.get("handler") != entry.get("handler"):
            return None
        keys = ["inputSchema"]
        if every_result or entry.get("handler"):
            keys.append("outputSchema")
        if any(structure(old.get(key)) != structure(entry.get(key)) for key in keys):
            return None
        spans.append((first, last, _indented(entry, 4)))
    return _replaced(text, spans)


def _patched_lock(
    text: str, server: ir.Server, previous: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, str], str]:
    """The lock's document (its head and the changed tools' summaries: what the comparison
    with the previous lock reads), every summary's canonical text, and its new text."""
    new, texts = lock_parts(server)
    summaries = dict(previous["summaries"])
    summaries.update(texts)
    digest = summaries_digest(summaries)
    spans = []
    for name, summary in new["tools"].items():
        key = f"\n    {compact(name)}: {{\n"
        at = text.find(key)
        if at < 0:
            raise _Unpatchable(name)
        first = at + len(key) - 2
        last = text.find("\n    }", first) + len("\n    }")
        spans.append((first, last, _indented(summary, 4)))
    hash_line = '\n  "hash": "'
    at = text.index(hash_line) + len(hash_line)
    if text[at + 64] != '"':
        raise _Unpatchable("hash")
    spans.append((at, at + 64, digest))
    patched_text = _replaced(text, spans)
    tools_at = patched_text.index('\n  "tools": {\n')
    head = parse_lock(patched_text[:tools_at] + '\n  "tools": {}\n}\n')
    document = {**head, "tools": new["tools"]}
    return document, summaries, patched_text


def _patched_cases(text: str, server: ir.Server, previous: Mapping[str, Any]) -> str | None:
    """`generated_cases.json` with the server's tools' cases in place of the old ones."""
    cases = orjson.loads(text)
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


def _patched_reference(
    text: str, server: ir.Server, options: GenerateOptions, spec: Path, output: Path
) -> str:
    """`REFERENCE.md` with the server's tools' rows replaced."""
    inputs = RenderInputs(server=server, models="", cases={}, spec_file=relative(spec, output))
    spans = []
    for name, row in reference_rows(inputs).items():
        start = text.index(reference_row_start(name)) + 1
        spans.append((start, text.index("\n", start) + 1, row))
    return _replaced(text, spans)
