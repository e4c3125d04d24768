"""The generator's size and shape: lines, modules over 600 lines, import cycles.

    .venv/bin/python benchmarks/codesize.py [--write-docs]

Counts the lines of every module of `generator/mcpmint` (the runtime apart: it is the
generated servers' code), lists the modules over 600 lines, and finds import cycles among
mcpmint's own modules, in the generator and in the runtime, counting imports inside
functions too (a lazy import is still a dependency). A cycle is a strongly connected group of
modules; each is printed with its members.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

from report import machine, write_section

PACKAGE = Path(__file__).resolve().parents[1] / "generator" / "mcpmint"
LONG = 600


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """mcpmint's modules that `path` imports, anywhere in it."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return {module for module in found if module in modules and module != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in files}
    graph = {module_name(path): imports(path, modules) for path in files}
    sizes = {module_name(p): len(p.read_text(encoding="utf-8").splitlines()) for p in files}
    runtime = {m for m in modules if m.startswith("mcpmint.runtime")}
    generator_lines = sum(size for module, size in sizes.items() if module not in runtime)
    runtime_lines = sum(sizes[module] for module in runtime)
    long = sorted((m for m in modules if sizes[m] > LONG), key=lambda m: -sizes[m])
    found = cycles(graph)
    lines = [
        "## Code size and shape",
        "",
        f"`benchmarks/codesize.py --write-docs`, {machine()}.",
        "",
        "| what | figure |",
        "|---|---|",
        f"| generator lines (runtime apart) | {generator_lines:,} in "
        f"{len(modules - runtime)} modules |",
        f"| runtime lines | {runtime_lines:,} in {len(runtime)} modules |",
        f"| modules over {LONG} lines | {len(long)} |",
        f"| import cycles | {len(found)} |",
    ]
    if long:
        lines += ["", f"Over {LONG} lines (each says why in its docstring):", ""]
        lines += [f"- `{m}`: {sizes[m]}" for m in long]
    if found:
        lines += ["", "Cycles:", ""] + [f"- {' <-> '.join(group)}" for group in found]
    text = "\n".join(lines)
    print(text)
    if args.write_docs:
        write_section("codesize", text)


if __name__ == "__main__":
    main()
