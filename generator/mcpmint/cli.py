"""The `mcpmint` command line.

Exit codes: 0 success; 1 output stale (`--check`) or a hand-edited file refused; 2 bad input;
3 an internal error (a bug: please report it).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from . import __version__
from .diagnostics import Aborted, DiagnosticSink
from .pipeline import GenerateOptions, build, generate
from .render import tool_definition

app = typer.Typer(
    name="mcpmint",
    help="Generate typed, strict, safe MCP servers from OpenAPI specs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_OK, EXIT_STALE, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
SpecArgument = Annotated[
    Path, typer.Argument(help="OpenAPI spec (YAML or JSON).", show_default=False)
]
RootOption = Annotated[
    Path | None,
    typer.Option(
        "--root",
        help="Folder that $refs may reach (default: the spec's own folder); nothing outside "
        "it is ever read.",
    ),
]
NamespaceOption = Annotated[
    str | None,
    typer.Option("--namespace", "-n", help="Tool name prefix; default: from the spec's title."),
]


def _print_diagnostics(sink: DiagnosticSink) -> None:
    for diagnostic in sink:
        typer.echo(diagnostic.render(), err=True)


def _valid_namespace(namespace: str | None) -> str | None:
    if namespace is not None and not (
        namespace[:1].isalpha()
        and namespace.isascii()
        and namespace.replace("_", "").isalnum()
        and namespace.islower()
    ):
        typer.echo(
            f"error: --namespace {namespace!r} must be lower-case letters, digits and underscores, "
            "starting with a letter",
            err=True,
        )
        raise typer.Exit(EXIT_BAD_INPUT)
    return namespace


def _guard(run: Any) -> Any:
    """Run a command body; bad input exits 2 with its diagnostics, never with a traceback."""
    sink = DiagnosticSink()
    try:
        return run(sink)
    except Aborted as aborted:
        _print_diagnostics(aborted.sink)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except typer.Exit:
        raise
    except Exception as exc:
        if os.environ.get("MCPMINT_DEBUG"):
            raise
        _print_diagnostics(sink)
        typer.echo(
            f"internal error: {type(exc).__name__}: {exc}\n"
            "    hint: this is a bug in mcpmint; rerun with MCPMINT_DEBUG=1 and report it",
            err=True,
        )
        raise typer.Exit(EXIT_INTERNAL) from None


@app.command("generate")
def generate_command(
    spec: SpecArgument,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Output folder; default: ./<name>-mcp.")
    ] = None,
    namespace: NamespaceOption = None,
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 if the output is stale.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite generated files edited by hand.")
    ] = False,
    root: RootOption = None,
) -> None:
    """Generate (or regenerate) an MCP server package from SPEC."""
    namespace = _valid_namespace(namespace)

    def run(sink: DiagnosticSink) -> None:
        report = generate(spec, GenerateOptions(output, namespace, check, force, root), sink)
        out = report.output
        _print_diagnostics(sink)
        for path, diff in report.diffs.items():
            typer.echo(f"--- hand edits in {path}:\n{diff}", err=True)
        if report.refused:
            raise typer.Exit(EXIT_STALE)
        if check:
            if report.changed:
                changes = [*report.written, *report.scaffolded, *report.removed]
                typer.echo(f"{out}: out of date ({len(changes)} files): " + ", ".join(changes[:10]))
                raise typer.Exit(EXIT_STALE)
            typer.echo(f"{out}: up to date")
            return
        typer.echo(
            f"{out}: {len(report.written)} written, {len(report.scaffolded)} scaffolded, "
            f"{len(report.removed)} removed, {len(report.unchanged)} unchanged"
        )

    _guard(run)


@app.command("validate")
def validate_command(
    spec: SpecArgument, namespace: NamespaceOption = None, root: RootOption = None
) -> None:
    """Check SPEC and print its diagnostics; writes nothing."""
    namespace = _valid_namespace(namespace)

    def run(sink: DiagnosticSink) -> None:
        server = build(spec, sink, namespace, root)
        _print_diagnostics(sink)
        typer.echo(f"{spec}: ok, {len(server.tools)} tools, {len(sink.warnings)} warnings")

    _guard(run)


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


@app.command("tools")
def tools_command(
    spec: SpecArgument,
    namespace: NamespaceOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    root: RootOption = None,
) -> None:
    """List the tools SPEC gives and what they cost in a model's context."""
    namespace = _valid_namespace(namespace)

    def run(sink: DiagnosticSink) -> None:
        server = build(spec, sink, namespace, root)
        _print_diagnostics(sink)
        rows: list[dict[str, Any]] = [
            {
                "name": tool.name,
                "method": tool.request.method,
                "path": tool.request.path,
                "bytes": _size(tool_definition(tool)),
            }
            for tool in server.tools
        ]
        total = _size({"tools": [tool_definition(tool) for tool in server.tools]})
        # A rough, model-independent estimate: about four bytes of JSON per token.
        summary = {"tools": len(rows), "bytes": total, "estimatedTokens": total // 4}
        if as_json:
            for row in rows:
                row["estimatedTokens"] = row["bytes"] // 4
            typer.echo(json.dumps({"summary": summary, "tools": rows}, indent=2))
            return
        width = max((len(r["name"]) for r in rows), default=4)
        for row in rows:
            typer.echo(
                f"{row['name']:<{width}}  {row['bytes']:>7} B  ~{row['bytes'] // 4:>6} tok  "
                f"{row['method']} {row['path']}"
            )
        typer.echo(f"{summary['tools']} tools; tools/list is {total} bytes, ~{total // 4} tokens")

    _guard(run)


@app.callback(invoke_without_command=True)
def main(
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
) -> None:
    if version:
        typer.echo(f"mcpmint {__version__}")
        raise typer.Exit(EXIT_OK)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
