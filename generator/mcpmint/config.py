"""The project config, `mcpmint.yaml`: which spec a server draws on and how it becomes tools.

Read with the load stage's safe YAML composer (no tag is ever acted on, limits apply), checked
against `specs/mcpmint.schema.json` (JSON Schema 2020-12; unknown keys are errors) and turned
into frozen values. Every problem is a located diagnostic, `file:line:col` with a hint.
Reference: docs/config.md.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from mcpmint import ir
from mcpmint.build.toolmodes import ToolsOptions, read_tools_options
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.load.common import FileSource, Limits, Refused
from mcpmint.load.document import decode_utf8, parse_json
from mcpmint.refs import escape_token
from mcpmint.resources import bundled_schema
from mcpmint.settings import check_settings

if TYPE_CHECKING:  # imported where the schema is checked: the quick check needs none of it
    from jsonschema.exceptions import ValidationError

CONFIG_NAMES = ("mcpmint.yaml", "mcpmint.yml")
MAX_CONFIG_BYTES = 1024 * 1024
_DOCS_HINT = "see docs/config.md for every key, or point your editor at specs/mcpmint.schema.json"

AnnotationKey = Literal["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]


@dataclass(frozen=True)
class Selection:
    """Operations by tag, operationId, HTTP method (upper case) and path glob."""

    tags: tuple[str, ...] = ()
    operations: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    # Where each entry was written ("tags/0" -> "file:line:col"), for stale-entry errors.
    locations: tuple[tuple[str, str], ...] = ()
    location: str = ""

    def where(self, key: str, index: int) -> str:
        return dict(self.locations).get(f"{key}/{index}", self.location)


@dataclass(frozen=True)
class Override:
    """The operator's word on one operation; it may make a tool look safer than its method."""

    key: str  # an operationId or "METHOD /path", as written
    location: str  # file:line:col of the key
    name: str | None = None
    title: str | None = None
    description: str | None = None
    hidden: bool = False
    confirmation: ir.Confirmation | None = None
    annotations: tuple[tuple[AnnotationKey, bool], ...] = ()
    # Argument objects shown to the model; each is checked against the tool's input schema
    # at generation (an invalid one is an error at its location, example_locations[i]).
    examples: tuple[dict[str, Any], ...] = ()
    example_locations: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()  # inbound OAuth scopes a caller needs for this tool


@dataclass(frozen=True)
class Source:
    spec: Path  # resolved against the config's folder
    spec_text: str  # as written
    location: str
    namespace: str | None = None
    root: Path | None = None
    include: Selection | None = None
    exclude: Selection | None = None
    overrides: tuple[Override, ...] = ()
    kind: Literal["spec", "manifest"] = "spec"  # an OpenAPI document or a tool manifest
    resources: Selection | None = None  # GET operations that are also resource templates


@dataclass(frozen=True)
class ServerIdentity:
    name: str | None = None
    package: str | None = None
    version: str | None = None
    instructions: str | None = None


@dataclass(frozen=True)
class Config:
    path: Path  # the config file as the user gave it
    server: ServerIdentity
    sources: tuple[Source, ...]
    max_tool_name: int = 64
    confirmation: ir.ConfirmationPolicy = "writes"
    allow_partial: bool = False  # operations that cannot become tools: warnings, left out
    strict_schemas: bool = False  # input schemas in their strict variant (strict.py)
    formatter: str = "ruff"  # the layout of generated code: ruff or black (format.py)
    result_models: str = "auto"  # typed result models: auto, all or handlers (models.py)
    # Tool modes, token budget, concise results (toolmodes.py).
    tools: ToolsOptions = field(default_factory=ToolsOptions)
    # `settings:` (suffix, value) pairs for the generated server; the environment wins.
    settings: tuple[tuple[str, str], ...] = ()

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def source(self) -> Source:
        """The first (primary) source: namespace, env prefix and base URL of the server."""
        return self.sources[0]


_TOP_KEY = re.compile(r"^([A-Za-z_]+)[ \t]*:", re.MULTILINE)


def is_config_path(path: Path) -> bool:
    """A folder (its `mcpmint.yaml`), a file named `mcpmint.yaml`, `mcpmint.yml` or
    `<x>.mcpmint.yaml`, or a YAML file with a top-level `sources:` key and no `openapi:` or
    `swagger:` one. Anything else is read as a spec."""
    if path.is_dir():
        return True
    name = path.name.lower()
    if name in CONFIG_NAMES or name.endswith((".mcpmint.yaml", ".mcpmint.yml")):
        return True
    if not name.endswith((".yaml", ".yml")):
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(64 * 1024).decode("utf-8", "replace")
    except OSError:
        return False
    keys = set(_TOP_KEY.findall(head))
    return "sources" in keys and not keys & {"openapi", "swagger"}


def find_config(folder: Path) -> Path | None:
    """The config file in `folder`, if there is one."""
    for name in CONFIG_NAMES:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


def config_schema() -> dict[str, Any]:
    return bundled_schema("mcpmint.schema.json")


def load_config(path: Path, sink: DiagnosticSink, *, checked: bool = True) -> Config | None:
    """Read, check and interpret a project config; None (with located errors) if unusable.

    `checked=False` leaves out the check against the config's JSON Schema (and the import of
    jsonschema, a third of the pre-commit hooks' quick check): only for the quick check, which
    trusts the config only when its bytes are those a successful run recorded, and checked,
    with this same mcpmint (the inputs fingerprint holds both). Anything else the quick check
    declines, and the run that follows checks the config. Interpreting an unchecked config may
    raise: a caller that does not check must catch that too."""
    if path.is_dir():
        found = find_config(path)
        if found is None:
            sink.error(
                path.as_posix(),
                "no mcpmint.yaml in this folder",
                "pass a spec or a config file, or create mcpmint.yaml (docs/config.md)",
            )
            return None
        path = found
    errors_before = len(sink.errors)
    parsed = _read(path, sink)
    if parsed is None:
        return None
    data, source = parsed
    if not isinstance(data, dict):
        what = "empty" if data is None else f"a {type(data).__name__}, not a mapping"
        sink.error(
            source.locate(""), f"the config is {what}", "start from `sources: [{spec: ...}]`"
        )
        return None
    if checked:
        _check_schema(data, source, sink)
    if len(sink.errors) > errors_before:
        return None
    config = _interpret(path, data, source, sink)
    if len(sink.errors) > errors_before:
        return None
    return config


# ---------------------------------------------------------------------- reading
def _read(path: Path, sink: DiagnosticSink) -> tuple[Any, FileSource] | None:
    display = path.as_posix()
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            sink.error(display, f"{display} is not a regular file")
            return None
        if info.st_size > MAX_CONFIG_BYTES:
            sink.error(
                display,
                f"the config is {info.st_size} bytes, more than {MAX_CONFIG_BYTES}",
                "a project config is a short file; keep specs and manifests in their own files",
            )
            return None
        raw = path.read_bytes()[: MAX_CONFIG_BYTES + 1]
    except OSError as exc:
        sink.error(display, f"cannot read {display}: {exc.strerror}")
        return None
    limits = Limits(max_bytes=MAX_CONFIG_BYTES, max_aliases=20, max_depth=32, max_nodes=100_000)
    try:
        text = decode_utf8(raw, display)
        if path.suffix.lower() == ".json":
            return parse_json(text, display, limits, sink)
        from mcpmint.load.yamlparse import parse_yaml

        return parse_yaml(text, display, limits, sink)
    except Refused as exc:
        sink.error(exc.location, exc.message, exc.hint)
        return None


# ---------------------------------------------------------------------- schema
def _pointer(parts: Any) -> str:
    return "".join("/" + escape_token(str(p)) for p in parts)


def _check_schema(data: dict[str, Any], source: FileSource, sink: DiagnosticSink) -> None:
    check_schema(data, config_schema(), source, sink, _DOCS_HINT)


class Locator(Protocol):
    def locate(self, pointer: str) -> str: ...


def check_schema(
    data: Any,
    schema: Mapping[str, Any],
    source: Locator,
    sink: DiagnosticSink,
    docs_hint: str,
    subject: str = "the config",
) -> None:
    """Every error of `data` against `schema`, located and explained, in document order (also
    used for tool manifests, whose schema is specs/manifest.schema.json)."""
    from jsonschema import Draft202012Validator  # here: the quick check needs none of it

    validator = Draft202012Validator(schema)
    found = [
        explained
        for error in validator.iter_errors(data)
        for explained in _explain(error, source, docs_hint, subject)
    ]
    for location, message, hint in sorted(set(found), key=_document_order):
        sink.error(location, message, hint)


def _document_order(item: tuple[str, str, str]) -> tuple[int, int, str]:
    """`file:line:col` sorts by line and column, as the user reads the file."""
    parts = item[0].rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return int(parts[1]), int(parts[2]), item[1]
    return 0, 0, item[1]


def _explain(
    error: ValidationError,
    source: Locator,
    docs_hint: str = _DOCS_HINT,
    subject: str = "the config",
) -> list[tuple[str, str, str]]:
    """Located, readable messages for one schema error."""
    path = list(error.absolute_path)
    pointer = _pointer(path)
    where = source.locate(pointer)
    what = "/".join(str(p) for p in path) or subject
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    kind = error.validator
    expected: Any = error.validator_value
    instance: Any = error.instance
    if kind == "additionalProperties" and isinstance(error.instance, Mapping):
        allowed = sorted(schema.get("properties", {}))
        unknown = sorted(str(k) for k in error.instance if k not in allowed)
        return [
            (
                source.locate(f"{pointer}/{escape_token(key)}"),
                f"unknown key {key!r} in {what}",
                ("allowed keys: " + ", ".join(allowed) + "; " if allowed else "") + docs_hint,
            )
            for key in unknown
        ]
    if kind == "required":
        missing = ", ".join(repr(str(k)) for k in expected if k not in instance)
        return [(where, f"{what}: missing required key {missing}", docs_hint)]
    if kind == "enum":
        choices = " | ".join(str(v) for v in expected)
        return [(where, f"{what}: {error.instance!r} is not one of {choices}", docs_hint)]
    if kind == "type":
        return [
            (
                where,
                f"{what}: expected {error.validator_value}, got {_kind(error.instance)}",
                docs_hint,
            )
        ]
    if kind == "pattern":
        described = schema.get("description", "")
        return [
            (
                where,
                f"{what}: {error.instance!r} does not match {error.validator_value}",
                described or docs_hint,
            )
        ]
    if kind == "minItems":
        return [(where, f"{what}: needs at least {expected} entry", docs_hint)]
    if kind == "minProperties":
        return [(where, f"{what}: needs at least {expected} key", docs_hint)]
    return [(where, f"{what}: {error.message}", schema.get("description", "") or docs_hint)]


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "a mapping"


# ---------------------------------------------------------------------- meaning
def _interpret(
    path: Path, data: dict[str, Any], source: FileSource, sink: DiagnosticSink
) -> Config | None:
    sources = data["sources"]
    folder = path.parent
    if not _sources_are_one_kind_each(sources, source, sink):
        return None
    read = [_source(folder, entry, f"/sources/{i}", source) for i, entry in enumerate(sources)]
    for index, entry in enumerate(read):
        if not entry.spec.is_file():
            sink.error(
                source.locate(f"/sources/{index}/{entry.kind}"),
                f"{entry.kind} {entry.spec_text!r} not found (looked for {entry.spec.as_posix()})",
                "paths in mcpmint.yaml are relative to the folder of mcpmint.yaml",
            )
        if entry.root is not None and not entry.root.is_dir():
            sink.error(
                source.locate(f"/sources/{index}/root"),
                f"root {entry.root.as_posix()!r} is not a folder",
                "paths in mcpmint.yaml are relative to the folder of mcpmint.yaml",
            )
    server = data.get("server", {})
    output = data.get("output", {})
    return Config(
        path=path,
        server=ServerIdentity(
            name=server.get("name"),
            package=server.get("package"),
            version=server.get("version"),
            instructions=server.get("instructions"),
        ),
        sources=tuple(read),
        max_tool_name=int(output.get("max_tool_name", 64)),
        confirmation=output.get("confirmation", "writes"),
        allow_partial=output.get("allow_partial", False) is True,
        strict_schemas=output.get("strict_schemas", False) is True,
        formatter=str(output.get("formatter", "ruff")),
        result_models=str(output.get("result_models", "auto")),
        tools=read_tools_options(data, source.locate),
        settings=check_settings(data.get("settings", {}), source.locate, sink),
    )


def _sources_are_one_kind_each(
    sources: list[dict[str, Any]], source: FileSource, sink: DiagnosticSink
) -> bool:
    """Each source names a spec or a manifest, not both; a manifest is shaped in its own file,
    so selection, overrides and root are for specs only (docs/manifests.md)."""
    ok = True
    for index, entry in enumerate(sources):
        where = source.locate(f"/sources/{index}")
        if ("spec" in entry) == ("manifest" in entry):
            sink.error(
                where,
                f"sources/{index}: give exactly one of 'spec' (an OpenAPI document) or "
                "'manifest' (a tool manifest)",
                _DOCS_HINT,
            )
            ok = False
        elif "manifest" in entry:
            for key in ("include", "exclude", "overrides", "root", "resources"):
                if key in entry:
                    sink.error(
                        source.locate(f"/sources/{index}/{key}"),
                        f"sources/{index}: {key!r} applies to OpenAPI specs, not manifests",
                        "edit the manifest itself: its tools are exactly the ones it lists",
                    )
                    ok = False
    return ok


def _source(folder: Path, entry: dict[str, Any], pointer: str, source: FileSource) -> Source:
    root = entry.get("root")
    kind: Literal["spec", "manifest"] = "manifest" if "manifest" in entry else "spec"
    return Source(
        kind=kind,
        spec=_join(folder, entry[kind]),
        spec_text=entry[kind],
        location=source.locate(pointer),
        namespace=entry.get("namespace"),
        root=_join(folder, root) if root is not None else None,
        include=_selection(entry.get("include"), f"{pointer}/include", source),
        resources=_selection(entry.get("resources"), f"{pointer}/resources", source),
        exclude=_selection(entry.get("exclude"), f"{pointer}/exclude", source),
        overrides=tuple(
            _override(key, value, f"{pointer}/overrides/{escape_token(key)}", source)
            for key, value in entry.get("overrides", {}).items()
        ),
    )


def _join(folder: Path, relative: str) -> Path:
    joined = folder / relative
    # Keep what the user sees short: `specs/petstore.yaml`, not `./specs/petstore.yaml`.
    return Path(os.path.normpath(joined)) if not Path(relative).is_absolute() else Path(relative)


def _selection(
    node: Mapping[str, Any] | None, pointer: str, source: FileSource
) -> Selection | None:
    if node is None:
        return None
    keys = ("tags", "operations", "methods", "paths")
    locations = tuple(
        (f"{key}/{index}", source.locate(f"{pointer}/{key}/{index}"))
        for key in keys
        for index in range(len(node.get(key, ())))
    )
    return Selection(
        tags=tuple(node.get("tags", ())),
        operations=tuple(node.get("operations", ())),
        methods=tuple(str(m).upper() for m in node.get("methods", ())),
        paths=tuple(node.get("paths", ())),
        locations=locations,
        location=source.locate(pointer),
    )


def _override(key: str, node: Mapping[str, Any], pointer: str, source: FileSource) -> Override:
    annotations = node.get("annotations", {})
    return Override(
        key=key,
        location=source.locate(pointer),
        name=node.get("name"),
        title=node.get("title"),
        description=node.get("description"),
        hidden=bool(node.get("hidden", False)),
        confirmation=node.get("confirmation"),
        annotations=tuple(sorted(annotations.items())),
        examples=tuple(node.get("examples", ())),
        example_locations=tuple(
            source.locate(f"{pointer}/examples/{i}") for i in range(len(node.get("examples", ())))
        ),
        scopes=tuple(node.get("scopes", ())),
    )


# ---------------------------------------------------------------------- scaffold
def scaffold_text(
    spec: str, namespace: str, root: str | None = None, *, dynamic: bool = False
) -> str:
    """The minimal `mcpmint.yaml` that `generate SPEC -o DIR` writes once into DIR, so that
    `mcpmint generate` inside DIR rebuilds the same server. Paths are relative to DIR.

    `dynamic`: the API is large (largeapi.py): the config offers dynamic mode, commented out."""
    lines = [
        "# The project config of this server: `mcpmint generate` in this folder regenerates",
        "# it. Yours to edit (mcpmint writes it once, when it is missing, and never again):",
        "# selection, overrides, server identity and output options are described in",
        "# mcpmint's docs/config.md.",
        "sources:",
        f"  - spec: {_yaml_scalar(spec)}",
        f"    namespace: {_yaml_scalar(namespace)}",
    ]
    if root is not None:
        lines.append(f"    root: {_yaml_scalar(root)}")
    if dynamic:
        # Commented out: this config must rebuild exactly the tree the run that wrote it
        # generated (all mode); a mode change is the user's, reviewed in the lock diff.
        lines += [
            "# This API is large: listing every tool takes more of a model's context than it",
            "# can spare. Dynamic mode lists three tools that search, describe and call the",
            "# others: uncomment the two lines below (or choose `mode: groups`, or accept the",
            "# size with `output: {token_budget: N}`); see docs/config.md (Large APIs).",
            "# tools:",
            "#   mode: dynamic",
        ]
    return "\n".join(lines) + "\n"


_PLAIN = re.compile(r"^[A-Za-z0-9_./][A-Za-z0-9_./-]*$")
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


def _yaml_scalar(value: str) -> str:
    """`value` as YAML that reads back as this very string: plain when that is safe."""
    if _PLAIN.match(value) and value.lower() not in _YAML_WORDS and not _is_number(value):
        return value
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted one


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True
