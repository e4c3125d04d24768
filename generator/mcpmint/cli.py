"""The `mcpmint` command line.

Exit codes: 0 success; 1 output stale (`--check`), a hand-edited file refused, breaking
tool-surface changes refused (`generate` without `--accept-breaking`) or breaking/review
changes found (`diff`); 2 bad input; 3 an internal error (a bug: please report it).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from . import __version__
from .config import Config, find_config, is_config_path, load_config
from .diagnostics import Aborted, DiagnosticSink
from .quickcheck import GenerateOptions, up_to_date

# The pipeline's stages are imported by the commands that run them: `generate --check` on an
# up-to-date project (every commit's pre-commit hook) needs none of them (quickcheck.py).
if TYPE_CHECKING:
    from .cache import Memo
    from .lock import Change

app = typer.Typer(
    name="mcpmint",
    help="Generate typed, strict, safe MCP servers from OpenAPI specs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_OK, EXIT_STALE, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
SpecOrConfigArgument = Annotated[
    Path | None,
    typer.Argument(
        help="OpenAPI spec (YAML or JSON), or a project config (mcpmint.yaml, or a folder "
        "holding one); default: ./mcpmint.yaml.",
        show_default=False,
    ),
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
AllowPartialOption = Annotated[
    bool,
    typer.Option(
        "--allow-partial",
        help="Leave out, with a warning, operations that cannot become tools (an unresolvable "
        "parameter or body $ref, an unsupported body media type) instead of stopping.",
    ),
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


def _input(
    path: Path | None, sink: DiagnosticSink, namespace: str | None, root: Path | None
) -> Path | Config:
    """A spec path, or the project config `path` names (default: ./mcpmint.yaml), loaded."""
    if path is None:
        path = find_config(Path("."))
        if path is None:
            typer.echo(
                "error: no SPEC given and no mcpmint.yaml in the current folder\n"
                "    hint: pass an OpenAPI spec (`mcpmint generate openapi.yaml -o DIR` also "
                "writes DIR/mcpmint.yaml), or run inside a folder that has mcpmint.yaml",
                err=True,
            )
            raise typer.Exit(EXIT_BAD_INPUT)
    if not is_config_path(path):
        return path
    for flag, value in (("--namespace", namespace), ("--root", root)):
        if value is not None:
            typer.echo(
                f"error: {flag} cannot be used with a project config\n"
                f"    hint: set `{flag[2:]}` of the source in {path.as_posix()}",
                err=True,
            )
            raise typer.Exit(EXIT_BAD_INPUT)
    config = load_config(path, sink)
    if config is None:
        raise Aborted(sink)
    return config


def _unchecked_input(
    path: Path | None, namespace: str | None, root: Path | None
) -> Path | Config | None:
    """`_input` for the quick check of `--check`: a project config read without its schema
    check (`load_config(checked=False)`: the quick check trusts only a config whose bytes a
    run checked), or None on any problem at all, which `_input` then reports."""
    try:
        path = path if path is not None else find_config(Path("."))
        if path is None or not is_config_path(path):
            return path
        if namespace is not None or root is not None:
            return None
        return load_config(path, DiagnosticSink(), checked=False)
    except Exception:  # an unchecked config may hold anything: the checked read says what
        return None


def _up_to_date(
    source: Path | Config, options: GenerateOptions, hashed: dict[str, str] | None = None
) -> bool:
    """`up_to_date` of an `_unchecked_input`: False when it cannot say (an unchecked config
    may hold anything; the checked read that follows says what is wrong)."""
    try:
        return up_to_date(source, options, hashed)
    except Exception:
        return False


def _build(
    path: Path | None,
    sink: DiagnosticSink,
    namespace: str | None,
    root: Path | None,
    allow_partial: bool = False,
) -> tuple[str, Any]:
    """What `validate` and `tools` show: the input's name and its server's IR."""
    from .pipeline import build_quickly

    source = _input(path, sink, namespace, root)
    name = source.path.as_posix() if isinstance(source, Config) else source.as_posix()
    return name, build_quickly(source, sink, namespace, root, allow_partial=allow_partial)


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
    spec: SpecOrConfigArgument = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Output folder; default: the config's folder, or ./<name>-mcp for a spec.",
        ),
    ] = None,
    namespace: NamespaceOption = None,
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 if the output is stale.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite generated files edited by hand.")
    ] = False,
    root: RootOption = None,
    accept_breaking: Annotated[
        bool,
        typer.Option(
            "--accept-breaking",
            help="Write even when the tool surface has breaking changes (removed or renamed "
            "tools, removed or newly required arguments, narrowed types, removed output fields).",
        ),
    ] = False,
    allow_partial: AllowPartialOption = False,
) -> None:
    """Generate (or regenerate) an MCP server package from SPEC or a project config.

    With no argument, ./mcpmint.yaml is used. A run from a spec also writes a minimal
    mcpmint.yaml into the output folder (once), so `mcpmint generate` there repeats it.

    Every run compares the new tool surface with the output's tools.lock.json and prints the
    changes, classified as breaking, review or additive. Breaking changes are refused (exit 1,
    nothing written) unless --accept-breaking is given. Exit codes: 0 written or up to date;
    1 stale (--check), a hand-edited file refused or breaking changes refused; 2 bad input.
    """
    namespace = _valid_namespace(namespace)

    def run(sink: DiagnosticSink) -> None:
        options = GenerateOptions(
            output, namespace, check, force, root, accept_breaking, allow_partial
        )
        # The quick check (quickcheck.py): when nothing changed, a run would write nothing.
        quick = _unchecked_input(spec, namespace, root)
        hashed: dict[str, str] = {}  # what the quick check hashed: not hashed again
        if quick is not None and _up_to_date(quick, options, hashed):
            out = output or (quick.folder if isinstance(quick, Config) else None)
            typer.echo(f"{out}: up to date (inputs unchanged)")
            return
        source = _input(spec, sink, namespace, root)
        from .pipeline import generate

        held = _HELD_TO_EXIT if _HARD_EXIT else None
        report = generate(
            source, options, sink, quick_checked=quick is not None, hashed=hashed, held=held
        )
        out = report.output
        if report.quick:  # the quick check answered there (this one could not read the input)
            typer.echo(f"{out}: up to date (inputs unchanged)")
            return
        _print_diagnostics(sink)
        if report.lock_changes:
            typer.echo(f"tool surface changes ({out}/tools.lock.json):")
            _print_changes(report.lock_changes)
        if report.blocked:
            breaking = [c for c in report.lock_changes if c.kind == "breaking"]
            typer.echo(
                f"error: refusing to write {out}: {len(breaking)} breaking change(s) to the tool "
                "surface: " + "; ".join(f"{c.tool}: {c.what} ({c.detail})" for c in breaking),
                err=True,
            )
            typer.echo(
                "    hint: clients and prompts that use these tools will break; review the "
                "changes, then pass --accept-breaking to write them",
                err=True,
            )
            raise typer.Exit(EXIT_STALE)
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
        patched = ""
        if report.patched is not None:  # patch.py: the other tools' files were patched
            patched = f" (patched: {len(report.patched)} tools built again, the others kept)"
        typer.echo(
            f"{out}: {len(report.written)} written, {len(report.scaffolded)} scaffolded, "
            f"{len(report.removed)} removed, {len(report.unchanged)} unchanged{patched}"
        )

    _guard(run)


@app.command("validate")
def validate_command(
    spec: SpecOrConfigArgument = None,
    namespace: NamespaceOption = None,
    root: RootOption = None,
    allow_partial: AllowPartialOption = False,
) -> None:
    """Check SPEC (or a project config and its spec) and print the diagnostics; writes
    nothing."""
    namespace = _valid_namespace(namespace)

    def run(sink: DiagnosticSink) -> None:
        name, server = _build(spec, sink, namespace, root, allow_partial)
        _print_diagnostics(sink)
        typer.echo(f"{name}: ok, {len(server.tools)} tools, {len(sink.warnings)} warnings")

    _guard(run)


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


@app.command("tools")
def tools_command(
    spec: SpecOrConfigArgument = None,
    namespace: NamespaceOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    root: RootOption = None,
    allow_partial: AllowPartialOption = False,
) -> None:
    """List the tools SPEC (or a project config) gives and what they cost in a model's
    context."""
    namespace = _valid_namespace(namespace)

    def run(sink: DiagnosticSink) -> None:
        from .quality import QUALITY_HINT, description_findings
        from .render import tool_definition
        from .toolmodes import listed_summary

        _, server = _build(spec, sink, namespace, root, allow_partial)
        _print_diagnostics(sink)
        findings = description_findings(server.tools)  # warnings only, never blocking
        for finding in findings:
            typer.echo(f"{finding.tool}: warning: {finding.message}", err=True)
        if findings:
            typer.echo(f"    hint: {QUALITY_HINT}", err=True)
        rows: list[dict[str, Any]] = [
            {
                "name": tool.name,
                "method": tool.endpoint[0],
                "path": tool.endpoint[1],
                "bytes": _size(tool_definition(tool)),
            }
            for tool in server.tools
        ]
        # `{"tools":[...]}` of these definitions, without writing all of them out again (16 MB
        # of JSON for GitHub): the brackets, the key and a comma between two tools.
        total = len('{"tools":[]}') + sum(row["bytes"] for row in rows) + max(len(rows) - 1, 0)
        # A rough, model-independent estimate: about four bytes of JSON per token.
        summary: dict[str, Any] = {
            "tools": len(rows),
            "bytes": total,
            "estimatedTokens": total // 4,
            # Tools whose input schema carries a whole example call (the spec's values, or
            # values its formats, enums and patterns give; never a placeholder).
            "toolsWithExample": sum(1 for tool in server.tools if tool.examples),
        }
        listed = listed_summary(server)  # tools.mode dynamic or groups lists fewer
        if listed is not None:
            summary["listed"] = listed
        if as_json:
            summary["descriptionFindings"] = len(findings)
            for row in rows:
                row["estimatedTokens"] = row["bytes"] // 4
                row["descriptionFindings"] = [
                    {"kind": f.kind, "message": f.message}
                    for f in findings
                    if f.tool == row["name"]
                ]
            typer.echo(json.dumps({"summary": summary, "tools": rows}, indent=2))
            return
        width = max((len(r["name"]) for r in rows), default=4)
        for row in rows:
            typer.echo(
                f"{row['name']:<{width}}  {row['bytes']:>7} B  ~{row['bytes'] // 4:>6} tok  "
                f"{row['method']} {row['path']}"
            )
        typer.echo(f"{summary['tools']} tools; tools/list is {total} bytes, ~{total // 4} tokens")
        typer.echo(
            f"{summary['toolsWithExample']} of {summary['tools']} tools have an example call "
            "(the spec's values, or from formats, enums and patterns)"
        )
        if listed is not None:
            typer.echo(
                f"tools.mode {listed['mode']}: tools/list shows {listed['tools']} tools, "
                f"{listed['bytes']} bytes, ~{listed['estimatedTokens']} tokens"
            )

    _guard(run)


def _print_changes(changes: list[Change]) -> None:
    from .lock import KINDS

    for kind in KINDS:
        group = [change for change in changes if change.kind == kind]
        if group:
            typer.echo(f"  {kind} ({len(group)}):")
            for change in group:
                typer.echo(f"    {change.tool}: {change.what}: {change.detail}")


def _surface(
    path: Path, sink: DiagnosticSink, namespace: str | None, root: Path | None, memo: Memo
) -> Any:
    """A lock document from a `tools.lock.json` file, or built in memory from a spec (reusing
    the tools in `memo`, and adding the ones it builds)."""
    from .lock import LockError, is_lock, lock_document, parse_lock
    from .pipeline import build_quickly

    if path.suffix == ".json" and path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            data = None
        if is_lock(data):
            try:
                return parse_lock(path.read_text(encoding="utf-8"))
            except LockError as exc:
                typer.echo(f"{path}: error: {exc}", err=True)
                raise typer.Exit(EXIT_BAD_INPUT) from None
    return lock_document(build_quickly(path, sink, namespace, root, memo=memo))


@app.command("diff")
def diff_command(
    old: Annotated[
        Path, typer.Argument(help="The old spec or tools.lock.json.", show_default=False)
    ],
    new: Annotated[
        Path, typer.Argument(help="The new spec or tools.lock.json.", show_default=False)
    ],
    namespace: NamespaceOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    root: RootOption = None,
) -> None:
    """Compare the tool surfaces of OLD and NEW (specs or tools.lock.json files).

    Prints every change, grouped as breaking, review or additive. Exit codes: 0 no changes or
    additive ones only; 1 breaking or review changes; 2 bad input. Writes nothing.
    """
    namespace = _valid_namespace(namespace)

    def run(sink: DiagnosticSink) -> None:
        from .cache import Memo
        from .lock import KINDS, diff_locks, needs_attention

        # The new spec's build reuses every tool the old one's built whose inputs are the
        # same (toolmemo.py): most of them, between two versions of an API.
        memo = Memo({})
        before = _surface(old, sink, namespace, root, memo)
        after = _surface(new, sink, namespace, root, Memo(memo.used))
        _print_diagnostics(sink)
        changes = diff_locks(before, after)
        counts = {kind: sum(1 for c in changes if c.kind == kind) for kind in KINDS}
        if as_json:
            document = {
                "summary": counts,
                "hash": {"old": before.get("hash"), "new": after.get("hash")},
                "changes": [change.to_json() for change in changes],
            }
            typer.echo(json.dumps(document, indent=2, sort_keys=True))
        elif changes:
            _print_changes(changes)
            typer.echo(", ".join(f"{counts[kind]} {kind}" for kind in KINDS))
        else:
            typer.echo("no changes to the tool surface")
        if needs_attention(changes):
            raise typer.Exit(EXIT_STALE)

    _guard(run)


def template_path() -> Path:
    """The copier template of a server project: the installed package (the wheel carries
    `mcpmint/copier.yml` next to `mcpmint/templates/project`, force-included by
    pyproject.toml), or the root of a checkout (copier.yml and templates/project)."""
    here = Path(__file__).resolve().parent
    for candidate in (here, here.parent.parent):
        if (candidate / "copier.yml").is_file() and (candidate / "templates/project").is_dir():
            return candidate
    raise FileNotFoundError("the copier template (copier.yml) is not installed with mcpmint")


def _spec_answer(spec: Path, folder: Path) -> str:
    """The `spec` answer for `init --spec`: the path relative to the new project, after
    copying a spec from outside the project into it (single-file specs only)."""
    if not spec.is_file():
        typer.echo(f"error: --spec {spec.as_posix()}: no such file", err=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    source, target = spec.resolve(), folder.resolve()
    if not source.is_relative_to(target):
        target.mkdir(parents=True, exist_ok=True)
        copied = target / source.name
        if copied.exists() and copied.read_bytes() != source.read_bytes():
            typer.echo(
                f"error: {copied.as_posix()} exists and differs from --spec {spec.as_posix()}",
                err=True,
            )
            raise typer.Exit(EXIT_BAD_INPUT)
        shutil.copyfile(source, copied)
        source = copied
    return source.relative_to(target).as_posix()


@app.command("init")
def init_command(
    folder: Annotated[
        Path, typer.Argument(help="The new project's folder (default: the current folder).")
    ] = Path("."),
    spec: Annotated[
        Path | None,
        typer.Option(
            "--spec",
            help="OpenAPI spec; copied into the project when it is outside it (a spec whose "
            "$refs reach other files must already be inside the project).",
        ),
    ] = None,
    defaults: Annotated[
        bool, typer.Option("--defaults", help="Ask nothing: use the defaults of every answer.")
    ] = False,
    data: Annotated[
        list[str] | None,
        typer.Option(
            "--data",
            "-d",
            help="An answer, KEY=VALUE (spec, namespace, distribution, package, transport, "
            "auth, hooks_repo, hooks_rev); repeatable.",
        ),
    ] = None,
) -> None:
    """Create a server project from mcpmint's copier template, then generate it.

    The same as `copier copy --trust <mcpmint's template> DIR`: the scaffold (mcpmint.yaml,
    README.md, .gitignore, .pre-commit-config.yaml, .copier-answers.yml) is written from the
    answers, then `mcpmint generate` writes the server. Needs copier (`pip install copier`).
    """
    try:
        import copier
    except ImportError:
        typer.echo("error: `mcpmint init` needs copier\n    hint: pip install copier", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    answers: dict[str, Any] = {}
    for item in data or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            typer.echo(f"error: --data {item!r}: expected KEY=VALUE", err=True)
            raise typer.Exit(EXIT_BAD_INPUT)
        answers[key] = value
    if spec is not None:
        answers["spec"] = _spec_answer(spec, folder)
    # The template's task runs `mcpmint generate`: this very installation's.
    scripts = [sysconfig.get_path("scripts"), str(Path(sys.executable).parent)]
    # (copier runs tasks in plumbum's copy of the environment, so that is where PATH goes.)
    from plumbum import local

    path = os.pathsep.join([*scripts, local.env.get("PATH", "")])
    try:
        with local.env(PATH=path):
            copier.run_copy(
                str(template_path()), folder, data=answers, defaults=defaults, unsafe=True
            )
    except copier.errors.TaskError as exc:
        typer.echo(f"error: mcpmint init: {exc}", err=True)
        raise typer.Exit(EXIT_STALE) from None
    except (copier.errors.CopierError, ValueError) as exc:
        typer.echo(f"error: mcpmint init: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    typer.echo(f"{folder.as_posix()}: created from mcpmint's project template")


@app.callback(invoke_without_command=True)
def main(
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
) -> None:
    if version:
        typer.echo(f"mcpmint {__version__}")
        raise typer.Exit(EXIT_OK)


# Set by `entry`, which ends the process without freeing what it holds: a run leaves its
# largest objects here instead of freeing them as it returns (pipeline.generate's `held`).
_HARD_EXIT = False
_HELD_TO_EXIT: list[Any] = []


def entry() -> None:
    """The `mcpmint` command (and `python -m mcpmint`): `app`, then a hard exit.

    After a run on a large spec the process holds a few hundred MB of small objects, and a
    normal exit frees them one by one: 0.2 s of a warm GitHub run, measured. Everything the
    command writes is closed by then and the second process is joined, so the exit skips
    that, once the output is flushed (as mypy does). In-process callers (tests) use `app`.
    """
    global _HARD_EXIT
    _HARD_EXIT = True
    try:
        app()
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:  # a message: what sys.exit would print, and its status
            print(exc.code, file=sys.stderr)
            code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
