"""Dynamic mode's search, tried as a model would: plain-language tasks against real catalogues.

    .venv/bin/python benchmarks/search_eval.py [--apis github,stripe] [--cache DIR] [--misses]
        [--json rows.json] [--no-sizes]

Each file of `benchmarks/search_tasks/` names a spec of `../shared/corpus/` and holds tasks:
what a user asks, and the operations (`METHOD path`, as the spec writes them) that answer it;
any one of them counts. The tasks were written from the specs' operation lists before any
search was run, and are frozen: they change only to fix a wrong answer, never to fit the
search.

Each API's set is split in two halves, deterministically: the tasks sorted by the SHA-256 of
their query, the first half is the *tuning* half (its misses may be looked at while changing
the search) and the second the *held-out* half (never looked at; only its figures are read).
`--misses` prints the tuning half's misses only.

The catalogue is built as `mcpmint generate` builds it (config in dynamic mode, the pipeline's
`build_config`, `tools.json` through JSON, `load_catalog`), and each query goes through the
server's own router (`search_tools` with `limit` 5), so the figures are what a model gets.
`--cache DIR` keeps each built catalogue, keyed by the spec's bytes and the generator's
sources outside the runtime (the search lives in the runtime: changing it keeps the cache).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus")
TASKS = Path(__file__).resolve().parent / "search_tasks"
SPECS = Path(__file__).resolve().parent / "search_specs"
LIMIT = 5


def split(tasks: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The tuning half and the held-out half (by the SHA-256 of each query)."""
    ordered = sorted(tasks, key=lambda t: hashlib.sha256(t["query"].encode()).hexdigest())
    half = (len(ordered) + 1) // 2
    return ordered[:half], ordered[half:]


def _generator_key(spec: Path, semantic: bool) -> str:
    digest = hashlib.sha256(spec.read_bytes())
    for source in sorted((ROOT / "generator" / "mcpmint").rglob("*.py")):
        # The runtime's search runs when the figures are taken, except the tools' vectors,
        # computed at generation from the text `semantic.tool_text` makes.
        if "runtime" not in source.parts or (semantic and source.stem in _VECTOR_SOURCES):
            digest.update(source.read_bytes())
    return digest.hexdigest()[:16] + ("-semantic" if semantic else "")


_VECTOR_SOURCES = ("semantic", "search")


def build_catalog_json(
    spec: Path, namespace: str, cache: Path | None, semantic: bool = False
) -> dict[str, Any]:
    """`tools.json` of `spec` in dynamic mode (with semantic search if asked), as the
    generator writes it."""
    key = f"{namespace}-{_generator_key(spec, semantic)}.json" if cache else ""
    if cache and (cache / key).is_file():
        loaded: dict[str, Any] = json.loads((cache / key).read_text(encoding="utf-8"))
        return loaded
    from mcpmint.config import load_config
    from mcpmint.diagnostics import DiagnosticSink
    from mcpmint.pipeline import build_config
    from mcpmint.render.templates import catalog

    with tempfile.TemporaryDirectory() as folder:
        config_file = Path(folder) / "mcpmint.yaml"
        config_file.write_text(
            f"sources:\n  - spec: {json.dumps(str(spec))}\n    namespace: {namespace}\n"
            "tools:\n  mode: dynamic\n" + ("  semantic: true\n" if semantic else ""),
            encoding="utf-8",
        )
        sink = DiagnosticSink()
        config = load_config(config_file, sink)
        if config is None:
            raise SystemExit(f"{spec}: the config does not load")
        server = build_config(config, sink, allow_partial=True)  # what cannot be a tool is left out
        if server is None:
            raise SystemExit(f"{spec}: the catalogue does not build")
        data: dict[str, Any] = json.loads(json.dumps(catalog(server)))
    if cache:
        cache.mkdir(parents=True, exist_ok=True)
        (cache / key).write_text(json.dumps(data), encoding="utf-8")
    return data


class Searcher:
    """The server's router over one catalogue: `search(query)` -> tool names, best first."""

    def __init__(self, data: dict[str, Any]) -> None:
        from mcpmint.runtime.catalog import load_catalog
        from mcpmint.runtime.modes import ToolRouter, meta_names

        for tool in data["tools"]:  # a wildcard request body (Jira's avatars): raw bytes
            body = (tool.get("request") or {}).get("body") or {}
            if "*" in body.get("mediaType", ""):
                body["mediaType"] = "application/octet-stream"
        self.catalog = load_catalog(data)
        self.raw_tools: list[dict[str, Any]] = data["tools"]
        allowed = {tool.name: tool for tool in self.catalog.tools}
        self.router = ToolRouter(self.catalog, allowed, environ={})
        self.search_name, self.describe_name, _ = meta_names(self.catalog.server.namespace)
        self.by_operation: dict[str, list[str]] = {}
        for tool in self.catalog.tools:
            if tool.request is not None:
                operation = f"{tool.request.method.upper()} {tool.request.path}"
                self.by_operation.setdefault(operation, []).append(tool.name)

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        import mcp_types as types

        result = self.router.route(types.CallToolRequestParams(name=name, arguments=arguments))
        assert isinstance(result, types.CallToolResult), result
        return result

    def search(self, query: str, limit: int = LIMIT) -> list[str]:
        result = self.call(self.search_name, {"query": query, "limit": limit})
        return [match["name"] for match in (result.structured_content or {}).get("tools", [])]


def size(value: Any) -> int:
    """Bytes of `value` as compact JSON (how benchmarks/run.py sizes a tools/list)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def sizes(searcher: Searcher) -> dict[str, Any]:
    """What the model reads besides search results: dynamic mode's tools/list, describe_tool's
    answer for every tool (median and largest), and all mode's tools/list with and without
    output schemas."""
    dynamic = [
        tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        for tool in searcher.router.meta_tools
    ]
    described = sorted(
        len(content.text.encode("utf-8"))
        for tool in searcher.catalog.tools
        for content in searcher.call(searcher.describe_name, {"name": tool.name}).content
    )
    keys = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
    every = [
        {k: v for k, v in raw.items() if k in keys and v is not None} for raw in searcher.raw_tools
    ]
    return {
        "dynamic_list": size({"tools": dynamic}),
        "describe_median": described[len(described) // 2],
        "describe_max": described[-1],
        "all_list": size({"tools": every}),
        "all_list_no_output": size(
            {"tools": [{k: v for k, v in t.items() if k != "outputSchema"} for t in every]}
        ),
    }


def _resolve(searcher: Searcher, operation: str, base_paths: tuple[str, ...]) -> list[str]:
    """The tools of `operation`. Where a spec gives one method and path several operations
    told apart by a fragment (Box's `PUT /files/{file_id}#add_shared_link`), the tools share
    the request; the fragment's tool ends with its words, and the plain one is the shortest."""
    method, _, path = operation.partition(" ")
    path, _, fragment = path.partition("#")
    for base in ("", *base_paths):
        names = searcher.by_operation.get(f"{method} {base}{path}")
        if names and len(names) > 1:
            if fragment:
                names = [n for n in names if n.endswith("_" + fragment.lower())]
            else:
                names = [n for n in names if len(n) == min(map(len, names))]
        if names:
            return names
    return []


def spec_of(suite: dict[str, Any], folder: Path) -> Path:
    """The spec a task set names: `spec` in the corpus, or `spec_file` (gzipped JSON) among
    benchmarks/search_specs/, unpacked into `folder`."""
    if "spec" in suite:
        return CORPUS / str(suite["spec"])
    packed = SPECS / str(suite["spec_file"])
    spec = folder / packed.name.removesuffix(".gz")
    spec.write_bytes(gzip.decompress(packed.read_bytes()))
    return spec


def evaluate(
    name: str, cache: Path | None, show_misses: bool, measure: bool = True, semantic: bool = False
) -> dict[str, Any]:
    spec_file = TASKS / f"{name}.yaml"
    suite = yaml.safe_load(spec_file.read_text(encoding="utf-8"))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        spec = spec_of(suite, Path(folder))
        searcher = Searcher(build_catalog_json(spec, suite["namespace"], cache, semantic))
    built = time.perf_counter() - started
    tuning, held_out = split(suite["tasks"])
    row: dict[str, Any] = {"api": name, "tools": len(searcher.catalog.tools), "build_s": built}
    for half_name, half in (("tuning", tuning), ("held_out", held_out)):
        hits = {1: 0, 3: 0, 5: 0}
        for task in half:
            wanted = {
                tool
                for operation in task["expect"]
                for tool in _resolve(searcher, operation, ("/v1", "/api"))
            }
            if not wanted:
                raise SystemExit(f"{spec_file}: no tool for {task['expect']}")
            found = searcher.search(task["query"])
            rank = next((i + 1 for i, n in enumerate(found) if n in wanted), None)
            for k in hits:
                hits[k] += rank is not None and rank <= k
            if show_misses and half_name == "tuning" and rank != 1:
                print(f"  [{name}] {task['query']!r}: want {sorted(wanted)}, got {found[:3]}")
        row[half_name] = {"tasks": len(half), **{f"top{k}": v for k, v in hits.items()}}
    if measure:
        row.update(sizes(searcher))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apis", default=",".join(sorted(p.stem for p in TASKS.glob("*.yaml"))))
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--misses", action="store_true", help="print the tuning half's misses")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--no-sizes", action="store_true", help="the search's figures only")
    parser.add_argument(
        "--semantic", action="store_true", help="catalogues with `tools.semantic: true`"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "generator"))
    rows = [
        evaluate(name, args.cache, args.misses, not args.no_sizes, args.semantic)
        for name in args.apis.split(",")
    ]
    print("| API | tools | tuning top-1 | top-3 | top-5 | held-out top-1 | top-3 | top-5 |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        cells = [row["api"], str(row["tools"])]
        for half in ("tuning", "held_out"):
            n = row[half]["tasks"]
            cells += [f"{row[half][f'top{k}']}/{n}" for k in (1, 3, 5)]
        print("| " + " | ".join(cells) + " |")
    if not args.no_sizes:
        print()
        print(
            "| API | dynamic tools/list | describe median | describe largest "
            "| all-mode tools/list | without output schemas |"
        )
        print("|---|---|---|---|---|---|")
        for row in rows:
            print(
                f"| {row['api']} | {row['dynamic_list']:,} B | {row['describe_median']:,} B "
                f"| {row['describe_max']:,} B | {row['all_list'] / 1e6:.2f} MB "
                f"| {row['all_list_no_output'] / 1e6:.2f} MB |"
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
