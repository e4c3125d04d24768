"""Typed models: pydantic classes for every tool's arguments, and for results.

datamodel-code-generator writes the classes from the tools' own (already converted) schemas,
not from the whole OpenAPI document: only what tools need is modelled. Spec text never
becomes code: the schemas handed over keep only structure (types, properties, items,
composition, enums), and the code that comes back is audited node by node before use.

Result models are for every tool, or for handler tools only (`every_result=False`): a
handler returns its result model, while an HTTP tool's result is the upstream's JSON, which
no generated code parses. On a large API every result model is megabytes of code and most
of the generation time (GitHub: 1.7 MB and 15 of 17 s), so `output.result_models: auto`
keeps them to handler tools there (largeapi.result_models_for).
"""

from __future__ import annotations

import ast
import hashlib
import json
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from . import ir, naming
from .background import Background
from .cache import StageCache, cache_key
from .diagnostics import Diagnostic, DiagnosticSink

# Keywords that shape a type. Everything else (descriptions, titles, examples, defaults,
# patterns, bounds) stays out of the models: it lives in tools.json, checked at run time.
_STRUCTURAL = frozenset(
    {
        "type",
        "properties",
        "required",
        "items",
        "prefixItems",
        "additionalProperties",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "enum",
        "const",
    }
)
# The distributions whose code writes the models (they key the cache).
_LIBRARIES = ("datamodel-code-generator", "pydantic")
_ALLOWED_CALLS = frozenset({"Field", "ConfigDict"})
_ALLOWED_NODES = (
    ast.Module,
    ast.ImportFrom,
    ast.alias,
    ast.ClassDef,
    ast.AnnAssign,
    ast.Assign,
    ast.Expr,
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Tuple,
    ast.List,
    ast.Dict,  # `__annotations__ = {"__pydantic_extra__": dict[str, str]}` for typed maps
    ast.Constant,
    ast.Call,
    ast.keyword,
    ast.BinOp,
    ast.BitOr,
    ast.UnaryOp,
    ast.USub,
    ast.Load,
    ast.Store,
    ast.Pass,
)


# Servers with at least this many tools get their models from a forked second process while
# the test cases and the lock are built (1.9 s of GitHub's 1,223 tools' argument models).
BACKGROUND_MIN_TOOLS = 200


def models_source(
    server: ir.Server,
    sink: DiagnosticSink,
    cache: StageCache | None = None,
    *,
    every_result: bool = True,
) -> str:
    """Python source of the models module (unformatted), or "" when it cannot be made.

    `every_result`: a result model for every tool with an output schema; False: for handler
    tools only (the module says so above its `RESULTS` map).

    datamodel-code-generator's output is a function of the combined structural schema alone
    (no descriptions, examples or bounds reach it), so `cache` reuses it whenever that schema
    is unchanged: a changed description, summary or bound costs no model generation.
    """
    return PendingModels(server, cache, every_result=every_result).join(sink)


class PendingModels:
    """The models module being made, in a forked second process on a large server
    (background.py); `join` gives what `models_source` returns."""

    def __init__(
        self,
        server: ir.Server,
        cache: StageCache | None,
        *,
        every_result: bool = True,
        before_fork: Callable[[], None] | None = None,
    ) -> None:
        """Looks the module up in `cache`; when it must be made, `before_fork` runs first (the
        pipeline ends a validation still running in the second process, which the models
        then take)."""
        document, self.names = _combined_schema(server, every_result)
        self.server, self.cache, self.every_result = server, cache, every_result
        text = json.dumps(document, sort_keys=True)
        self.key = cache_key(
            "models", hashlib.sha256(text.encode("utf-8")).hexdigest(), *_LIBRARIES
        )
        stored = cache.get("models", self.key) if cache is not None else None
        # A stored entry is audited like a fresh one: the cache folder is not trusted more
        # than the generator.
        self.stored = stored if isinstance(stored, str) and not audit(stored) else None
        self._background: Background[tuple[str, list[Diagnostic]]] | None = None
        if self.stored is None:
            if before_fork is not None:
                before_fork()
            location = server.source_file or "<spec>"
            self._background = Background(
                lambda: _generate(text, location),
                worth_it=len(server.tools) >= BACKGROUND_MIN_TOOLS,
            )

    def join(self, sink: DiagnosticSink) -> str:
        """The module's source, or "" with the errors in `sink`."""
        if self._background is not None:
            source, found = self._background.result()
            self._background = None
            sink.extend(found)
            if not source:
                return ""
            if self.cache is not None:
                self.cache.put("models", self.key, source)
        else:
            assert self.stored is not None
            source = self.stored
        names = self.names
        missing = [c for pair in names.values() for c in pair if c and f"class {c}(" not in source]
        if missing:
            sink.error(
                self.server.source_file or "<spec>",
                f"typed models: classes missing: {missing[:5]}",
            )
            return ""
        body = source.split("from __future__ import annotations", 1)[-1]
        return "from __future__ import annotations\n" + body + _registry(names, self.every_result)


def _generate(text: str, location: str) -> tuple[str, list[Diagnostic]]:
    """datamodel-code-generator over the combined schema `text`, audited: the source, or ""
    and the errors to report at `location` (a pure function: it may run in another process)."""
    sink = DiagnosticSink()
    try:
        from datamodel_code_generator import InputFileType, LiteralType, PythonVersion, generate
        from datamodel_code_generator.enums import DataModelType

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            source = generate(
                text,
                input_file_type=InputFileType.JsonSchema,
                output_model_type=DataModelType.PydanticV2BaseModel,
                target_python_version=PythonVersion.PY_311,
                disable_timestamp=True,
                enum_field_as_literal=LiteralType.All,
                use_standard_collections=True,
                use_union_operator=True,
                use_schema_description=False,
                use_field_description=False,
                formatters=[],  # the one ruff pass at the end formats models.py with the rest
                class_name="AnyValue",
            )
    except Exception as exc:
        sink.error(
            location,
            f"typed models could not be generated: {type(exc).__name__}: {str(exc)[:300]}",
            "report this with the spec attached; meanwhile simplify the schema it names",
        )
        return "", sink.items
    if not isinstance(source, str):
        sink.error(location, "typed models: unexpected generator output")
        return "", sink.items
    problem = audit(source)
    if problem:
        sink.error(
            location,
            f"typed models failed the code audit ({problem}); nothing was written",
            "this is a bug in the model generator's escaping; report it with the spec",
        )
        return "", sink.items
    return source, []


def audit(source: str) -> str:
    """ "" when `source` is only imports, classes, annotated fields and constant data."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return f"syntax error at line {exc.lineno}"
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            return f"unexpected {type(node).__name__} at line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Dict) and not all(isinstance(k, ast.Constant) for k in node.keys):
            return f"unexpected dict at line {node.lineno}"
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else ""
            if isinstance(func, ast.Attribute) and func.attr == "model_rebuild":
                continue
            if name not in _ALLOWED_CALLS:
                return f"unexpected call at line {node.lineno}"
    return ""


def class_names(tool: ir.Tool) -> tuple[str, str]:
    return f"{tool.class_stem}Arguments", f"{tool.class_stem}Result"


def _combined_schema(
    server: ir.Server, every_result: bool = True
) -> tuple[dict[str, Any], dict[str, tuple[str, str]]]:
    """One JSON Schema document whose `$defs` hold every tool's models and their shared parts
    (result models for every tool, or with `every_result` False for handler tools only).

    Each tool root's own `$defs` are hoisted with a per-mode prefix, because the same
    component converts differently for arguments (strict) and results (lenient).
    """
    defs: dict[str, Any] = {}
    names: dict[str, tuple[str, str]] = {}
    taken = {tool_name for tool in server.tools for tool_name in class_names(tool)}
    for tool in server.tools:
        arguments, result = class_names(tool)
        defs[arguments] = _hoist(tool.input_schema, "Arg", defs, taken)
        if tool.output_schema is not None and (every_result or tool.handler):
            defs[result] = _hoist(tool.output_schema, "", defs, taken)
            names[tool.name] = (arguments, result)
        else:
            names[tool.name] = (arguments, "")
    return {"$defs": dict(sorted(defs.items()))}, names


def _hoist(root: Mapping[str, Any], prefix: str, defs: dict[str, Any], taken: set[str]) -> Any:
    """The structural form of `root`, its own `$defs` merged into the shared `defs`.

    A local name keeps `prefix + name` when that global name is free or already holds the very
    same structure; otherwise it gets `V2`, `V3`, ... Two roots can use one name for different
    schemas (compaction names hoisted subschemas after the property they first occur at), and
    renaming one entry changes the structure of those that refer to it, hence the loop.
    """
    local_defs = root.get("$defs", {})
    seen: set[str] = set()
    renames = {name: naming.unique(_class_name(prefix, name), seen) for name in local_defs}
    for _attempt in range(len(local_defs) + 2):
        bodies = {name: _structural(schema, renames) for name, schema in local_defs.items()}
        used = set(renames.values())
        clashes = [
            name
            for name in local_defs
            if renames[name] in taken
            or (renames[name] in defs and defs[renames[name]] != bodies[name])
        ]
        if not clashes:
            break
        for name in clashes:
            base, number = _class_name(prefix, name), 1
            while True:
                number += 1
                wanted = f"{base}V{number}"
                if wanted in used or wanted in taken:
                    continue
                if wanted not in defs or defs[wanted] == bodies[name]:
                    break
            used.discard(renames[name])
            renames[name] = wanted
            used.add(wanted)
    else:  # pragma: no cover - the loop above always settles
        raise RuntimeError("typed models: $defs names did not settle")
    for name, body in bodies.items():
        defs.setdefault(renames[name], body)
    return _structural({k: v for k, v in root.items() if k != "$defs"}, renames)


def _class_name(prefix: str, name: str) -> str:
    """A plain identifier for a `$defs` entry: dots would make the model generator write
    one module per dotted prefix (`issuing.authorization`) instead of one module."""
    stem = naming.pascal(name) or "Schema"
    return f"{prefix}{stem}" if stem[0].isalpha() else f"{prefix}M{stem}"


def _structural(node: Any, renames: Mapping[str, str]) -> Any:
    if isinstance(node, list):
        return [_structural(item, renames) for item in node]
    if not isinstance(node, Mapping):
        return node
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key not in _STRUCTURAL:
            continue
        if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
            result[key] = "#/$defs/" + renames.get(value[len("#/$defs/") :], value[8:])
        elif key == "properties" and isinstance(value, Mapping):
            result[key] = {name: _structural(sub, renames) for name, sub in value.items()}
        elif key in ("enum", "const", "required"):
            result[key] = value
        else:
            result[key] = _structural(value, renames)
    return result


def _registry(names: Mapping[str, tuple[str, str]], every_result: bool) -> str:
    """Maps from tool name to model class; names are checked identifiers, keys are repr()."""
    arguments = "".join(f"    {tool!r}: {pair[0]},\n" for tool, pair in sorted(names.items()))
    results = "".join(
        f"    {tool!r}: {pair[1]},\n" for tool, pair in sorted(names.items()) if pair[1]
    )
    scope = (
        ""
        if every_result
        else "# Handler tools only (`output.result_models` in mcpmint.yaml): the other tools'\n"
        "# results are the upstream's JSON, which no generated code parses.\n"
    )
    return (
        "\n\nARGUMENTS: dict[str, type[BaseModel]] = {\n"
        + arguments
        + "}\n\n"
        + scope
        + "RESULTS: dict[str, type[BaseModel]] = {\n"
        + results
        + "}\n"
    )
