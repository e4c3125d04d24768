"""The `mcpmint` command line.

Exit codes: 0 success; 1 output stale (`--check`), a hand-edited file refused, breaking
tool-surface changes refused (`generate` without `--accept-breaking`) or breaking/review
changes found (`diff`); 2 bad input; 3 an internal error (a bug: please report it).

One module, over 600 lines: each command is a short typer function, and what they share (the
input, the guard that turns bad input into exit 2, the printing of diagnostics and changes)
is here once; the work itself is the pipeline's.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import sys
import sysconfig
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mcpmint import __version__
from mcpmint.config import Config, find_config, is_config_path, load_config
from mcpmint.diagnostics import Aborted, DiagnosticSink
from mcpmint.write.quickcheck import GenerateOptions, up_to_date

# The pipeline's stages are imported by the commands that run them: `generate --check` on an
# up-to-date project (every commit's pre-commit hook) needs none of them (quickcheck.py).
if TYPE_CHECKING:
    from mcpmint.write.cache import Memo
    from mcpmint.write.lock import Change

app = typer.Typer(
    name="mcpmint",
    help="Generate typed, strict, safe MCP servers from OpenAPI specs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Paragraphs of the docstrings are reflowed to the terminal's width (Markdown's soft line
    # breaks), not cut where the source lines end.
    rich_markup_mode="markdown",
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
FailOnWarningOption = Annotated[
    bool,
    typer.Option(
        "--fail-on-warning",
        help="Exit 1 when there are warnings (after printing them; generate writes as usual).",
    ),
]
QuietOption = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="Print no next steps and no progress."),
]
AllowPartialOption = Annotated[
    bool,
    typer.Option(
        "--allow-partial",
        help="Leave out, with a warning, operations that cannot become tools (an unresolvable "
        "parameter or body $ref, an unsupported body media type) instead of stopping.",
    ),
]


@contextmanager
def _progress(what: str, quiet: bool) -> Iterator[None]:
    """On a terminal, a line on stderr with the seconds elapsed, once a run has taken
    $MCPMINT_PROGRESS_AFTER seconds (default 1.5); cleared when it ends.

    Drawn from a SIGALRM timer, not a thread: the run forks its second process
    (background.py), and a fork copies no timer and no thread holding a lock. Written with
    os.write: the handler may interrupt a write of the main code's to sys.stderr."""
    import signal
    import threading
    import time

    try:
        after = max(float(os.environ.get("MCPMINT_PROGRESS_AFTER", "1.5")), 0.001)
    except ValueError:
        after = 1.5
    if (
        quiet
        or not sys.stderr.isatty()
        or not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return
    start = time.monotonic()
    shown = False

    def tick(_signum: int, _frame: object) -> None:
        nonlocal shown
        line = f"\r{what} ({time.monotonic() - start:.0f} s)"
        os.write(sys.stderr.fileno(), line.encode("utf-8", "replace"))
        shown = True

    previous = signal.signal(signal.SIGALRM, tick)
    signal.setitimer(signal.ITIMER_REAL, after, 0.5)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if shown:
            os.write(sys.stderr.fileno(), b"\r\x1b[K")


def _fail_on_warnings(sink: DiagnosticSink, fail_on_warning: bool) -> None:
    if fail_on_warning and sink.warnings:
        typer.echo(
            f"error: {len(sink.warnings)} warning(s) and --fail-on-warning\n"
            "    hint: each warning above names what to change in the spec or config",
            err=True,
        )
        raise typer.Exit(EXIT_STALE)


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


def _fetched(path: Path, folder: Path | None) -> Path:
    """`path` itself, or, when it is an http(s) URL, the spec fetched from there (fetch.py)
    into `folder` (None: a temporary folder that lasts as long as the process)."""
    from mcpmint.load.fetch import FetchError, as_url, fetch_to

    url = as_url(str(path))
    if url is None:
        return path
    if folder is None:
        import tempfile

        temporary = tempfile.TemporaryDirectory(prefix="mcpmint-fetched-")
        _FETCHED.append(temporary)  # removed when the command ends (_guard)
        folder = Path(temporary.name)
    try:
        fetched = fetch_to(url, folder)
    except FetchError as exc:
        typer.echo(f"error: {exc.message}\n    hint: {exc.hint}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    typer.echo(f"fetched {url} -> {fetched.as_posix()}", err=True)
    return fetched


def _input(
    path: Path | None,
    sink: DiagnosticSink,
    namespace: str | None,
    root: Path | None,
    fetch_into: Path | None = None,
) -> Path | Config:
    """A spec path, or the project config `path` names (default: ./mcpmint.yaml), loaded. A
    spec given by URL is fetched first, into `fetch_into` (or a temporary folder)."""
    if path is not None:
        path = _fetched(path, fetch_into)
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


def _up_to_date(source: Path | Config, options: GenerateOptions) -> bool:
    """`up_to_date` of an `_unchecked_input`: False when it cannot say (an unchecked config
    may hold anything; the checked read that follows says what is wrong)."""
    try:
        return up_to_date(source, options)
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
    from mcpmint.pipeline import build_cached

    source = _input(path, sink, namespace, root)
    name = source.path.as_posix() if isinstance(source, Config) else source.as_posix()
    with _progress(f"mcpmint: reading {name}", quiet=False):
        return name, build_cached(source, sink, namespace, root, allow_partial=allow_partial)


_FETCHED: list[Any] = []  # temporary folders of specs fetched by URL for this command


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
    finally:
        while _FETCHED:
            _FETCHED.pop().cleanup()


@app.command("generate")
def generate_command(
    spec: SpecOrConfigArgument = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Output folder; default: the config's folder, or ./NAME-mcp for a spec (NAME "
            "from its title).",
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
    fail_on_warning: FailOnWarningOption = False,
    quiet: QuietOption = False,
) -> None:
    """Generate (or regenerate) an MCP server package from SPEC or a project config.

    With no argument, ./mcpmint.yaml is used. A run from a spec also writes a minimal
    mcpmint.yaml into the output folder (once), so `mcpmint generate` there repeats it.

    Every run compares the new tool surface with the output's tools.lock.json and prints the
    changes, classified as breaking, review or additive. Breaking changes are refused (exit 1,
    nothing written) unless --accept-breaking is given. Exit codes: 0 written or up to date;
    1 stale (--check), a hand-edited file refused, breaking changes refused, or warnings with
    --fail-on-warning; 2 bad input.
    """
    namespace = _valid_namespace(namespace)

    def run(sink: DiagnosticSink) -> None:
        options = GenerateOptions(
            output, namespace, check, force, root, accept_breaking, allow_partial
        )
        # The quick check (quickcheck.py), before the pipeline is imported: when nothing
        # changed, a run would write nothing.
        # Not with --fail-on-warning: an unchanged project's warnings need a run to be seen.
        from mcpmint.load.fetch import as_url

        by_url = spec is not None and as_url(str(spec)) is not None
        quick = None if fail_on_warning or by_url else _unchecked_input(spec, namespace, root)
        if quick is not None and _up_to_date(quick, options):
            out = output or (quick.folder if isinstance(quick, Config) else None)
            typer.echo(f"{out}: up to date (inputs unchanged)")
            return
        # A spec by URL is kept beside the output (or here), where mcpmint.yaml can name it.
        source = _input(spec, sink, namespace, root, fetch_into=output or Path("."))
        from mcpmint.pipeline import generate

        name = source.path if isinstance(source, Config) else source
        with _progress(f"mcpmint: generating from {name.as_posix()}", quiet):
            report = generate(source, options, sink)
        out = report.output
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
            _fail_on_warnings(sink, fail_on_warning)
            return
        typer.echo(
            f"{out}: {len(report.written)} written, {len(report.scaffolded)} scaffolded, "
            f"{len(report.removed)} removed, {len(report.unchanged)} unchanged"
        )
        # A new package (its pyproject.toml scaffolded just now): what to do with it.
        if (
            "pyproject.toml" in report.scaffolded
            and not quiet
            and out is not None
            and report.catalog is not None
        ):
            from mcpmint.nextsteps import next_steps

            steps = next_steps(out, report.catalog)
            if steps:
                typer.echo(steps)
        _fail_on_warnings(sink, fail_on_warning)

    _guard(run)


@app.command("validate")
def validate_command(
    spec: SpecOrConfigArgument = None,
    namespace: NamespaceOption = None,
    root: RootOption = None,
    allow_partial: AllowPartialOption = False,
    fail_on_warning: FailOnWarningOption = False,
) -> None:
    """Check SPEC (or a project config and its spec) and print the diagnostics; writes
    nothing. Exit codes: 0 valid; 1 warnings with --fail-on-warning; 2 errors."""
    namespace = _valid_namespace(namespace)

    def run(sink: DiagnosticSink) -> None:
        name, server = _build(spec, sink, namespace, root, allow_partial)
        _print_diagnostics(sink)
        warned = len(sink.warnings)
        also = " (--fail-on-warning makes them fail)" if warned and not fail_on_warning else ""
        typer.echo(f"{name}: ok, {len(server.tools)} tools, {warned} warnings{also}")
        _fail_on_warnings(sink, fail_on_warning)

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
        from mcpmint.build.quality import QUALITY_HINT, description_findings
        from mcpmint.build.toolmodes import listed_summary
        from mcpmint.render.templates import tool_definition

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
        # `{"tools":[...]}` of these definitions, without writing all of them out again: the
        # brackets, the key and a comma between two tools.
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
    from mcpmint.write.lock import KINDS

    for kind in KINDS:
        group = [change for change in changes if change.kind == kind]
        if group:
            typer.echo(f"  {kind} ({len(group)}):")
            for change in group:
                typer.echo(f"    {change.tool}: {change.what}: {change.detail}")


def _surface(
    path: Path, sink: DiagnosticSink, namespace: str | None, root: Path | None, memo: Memo
) -> Any:
    """A lock document from a `tools.lock.json` file, or built in memory from a spec or a
    project config (reusing the tools in `memo`, and adding the ones it builds)."""
    from mcpmint.pipeline import build_cached
    from mcpmint.write.lock import LockError, is_lock, lock_document, parse_lock

    path = _fetched(path, None)
    if is_config_path(path):
        return lock_document(build_cached(_input(path, sink, namespace, root), sink, memo=memo))

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
    return lock_document(build_cached(path, sink, namespace, root, memo=memo))


@app.command("diff")
def diff_command(
    old: Annotated[
        Path | None,
        typer.Argument(
            help="The old spec, tools.lock.json or project config; default: the lock of "
            "./mcpmint.yaml's project.",
            show_default=False,
        ),
    ] = None,
    new: Annotated[
        Path | None,
        typer.Argument(
            help="The new spec, tools.lock.json or project config; default: what the project "
            "config would generate now.",
            show_default=False,
        ),
    ] = None,
    namespace: NamespaceOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    root: RootOption = None,
) -> None:
    """Compare the tool surfaces of OLD and NEW (specs, tools.lock.json files or project
    configs).

    With no argument, inside a project: its tools.lock.json against what its current inputs
    (mcpmint.yaml and the spec) would generate. With only a project config (mcpmint.yaml, or
    its folder): the same for that project. Prints every change, grouped as breaking, review
    or additive. Exit codes: 0 no changes or
    additive ones only; 1 breaking or review changes; 2 bad input. Writes nothing.
    """
    namespace = _valid_namespace(namespace)

    def run(sink: DiagnosticSink) -> None:
        from mcpmint.write.cache import Memo
        from mcpmint.write.lock import KINDS, LOCK_FILE, diff_locks, needs_attention

        before_path, after_path = old, new
        if after_path is None:
            config = before_path if before_path is not None else find_config(Path("."))
            if config is None or not is_config_path(config):
                typer.echo(
                    "error: `mcpmint diff` needs OLD and NEW, or a project config\n"
                    "    hint: run it inside a project (a folder with mcpmint.yaml), or give "
                    "mcpmint.yaml, or two specs or tools.lock.json files",
                    err=True,
                )
                raise typer.Exit(EXIT_BAD_INPUT)
            loaded = _input(config, sink, namespace, root)
            assert isinstance(loaded, Config)
            before_path, after_path = loaded.folder / LOCK_FILE, config
            if not before_path.is_file():
                typer.echo(
                    f"error: {before_path.as_posix()}: no such file\n    hint: `mcpmint "
                    "generate` writes it; until then there is nothing to compare with",
                    err=True,
                )
                raise typer.Exit(EXIT_BAD_INPUT)

        # The new spec's build reuses every tool the old one's built whose inputs are the
        # same (toolmemo.py): most of them, between two versions of an API.
        memo = Memo({})
        assert before_path is not None  # typer fills OLD before NEW
        with _progress("mcpmint: comparing", quiet=False):
            before = _surface(before_path, sink, namespace, root, memo)
            after = _surface(after_path, sink, namespace, root, Memo(memo.used))
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
    copying a spec from outside the project into it (single-file specs only), or fetching it
    there from its URL."""
    spec = _fetched(spec, folder)
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


@contextmanager
def _mcpmint_on_path() -> Iterator[None]:
    """The template's task runs `mcpmint generate`: this very installation's. (copier runs
    tasks in plumbum's copy of the environment, so that is where PATH goes.)"""
    from plumbum import local

    scripts = [sysconfig.get_path("scripts"), str(Path(sys.executable).parent)]
    with local.env(PATH=os.pathsep.join([*scripts, local.env.get("PATH", "")])):
        yield


def _template_repo() -> tuple[str, str | None]:
    """The copier template as a git repository `copier update` can go back to, and its tag
    (template_repo.py); without git, the plain folder (copy works, update will not)."""
    from mcpmint.template_repo import TemplateRepoError, sync

    template = template_path()
    try:
        repo, tag = sync(template, __version__)
    except TemplateRepoError as exc:
        typer.echo(
            f"warning: {exc}\n    hint: the project is made from {template}, which `copier "
            "update` cannot go back to; install git, then run `mcpmint update` to update it",
            err=True,
        )
        return str(template), None
    return str(repo), tag


@contextmanager
def _copier_errors(operation: str) -> Iterator[None]:
    """What `init` and `update` say when copier fails: exit 1 for a failed task (the
    generation), 2 for anything else."""
    import copier

    try:
        yield
    except copier.errors.TaskError as exc:
        typer.echo(f"error: mcpmint {operation}: {exc}", err=True)
        raise typer.Exit(EXIT_STALE) from None
    except (copier.errors.CopierError, ValueError) as exc:
        typer.echo(f"error: mcpmint {operation}: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None


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

    The same as `copier copy --trust` of mcpmint's template: the scaffold (mcpmint.yaml,
    README.md, .gitignore, .pre-commit-config.yaml, .copier-answers.yml) is written from the
    answers, then `mcpmint generate` writes the server. The namespace defaults to the one
    `mcpmint generate` takes from the spec's title. `mcpmint update` (or `copier update
    --trust`) later brings in changes to the template.
    """
    import copier

    answers: dict[str, Any] = {}
    for item in data or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            typer.echo(f"error: --data {item!r}: expected KEY=VALUE", err=True)
            raise typer.Exit(EXIT_BAD_INPUT)
        answers[key] = value
    if spec is not None:
        answers["spec"] = _spec_answer(spec, folder)
    if "namespace" not in answers:  # the rule of `generate`, when the spec is there
        from mcpmint.build.namespaces import spec_namespace

        named = spec_namespace(folder / str(answers.get("spec", "openapi.yaml")))
        if named is not None:
            answers["namespace"] = named
    source, tag = _template_repo()
    with _copier_errors("init"), _mcpmint_on_path():
        copier.run_copy(source, folder, data=answers, defaults=defaults, unsafe=True, vcs_ref=tag)
    typer.echo(f"{folder.as_posix()}: created from mcpmint's project template")
    if folder.resolve() != Path.cwd().resolve():
        typer.echo(f"    (the next steps above are for inside it: cd {folder.as_posix()})")


@app.command("update")
def update_command(
    folder: Annotated[
        Path, typer.Argument(help="The project's folder (default: the current folder).")
    ] = Path("."),
) -> None:
    """Bring this mcpmint's project template into a project made by `mcpmint init`.

    Runs `copier update --trust --defaults` on the project (a git work tree without
    uncommitted changes): your edits to the template's files are kept, the template's changes
    merged in (conflicts are marked as in a git merge), then `mcpmint generate` runs.
    """
    import copier

    if not (folder / ".copier-answers.yml").is_file():
        typer.echo(
            f"error: {folder.as_posix()}: no .copier-answers.yml\n    hint: `mcpmint update` "
            "updates a project made by `mcpmint init` or `copier copy`",
            err=True,
        )
        raise typer.Exit(EXIT_BAD_INPUT)
    import yaml

    source, tag = _template_repo()  # the installed template, committed where answers point
    try:
        recorded = yaml.safe_load((folder / ".copier-answers.yml").read_text(encoding="utf-8"))
        ours = Path(str(recorded.get("_src_path"))).resolve() == Path(source).resolve()
    except (OSError, UnicodeDecodeError, yaml.YAMLError, AttributeError):
        ours = False
    with _copier_errors("update"), _mcpmint_on_path():
        # This mcpmint's template version, named (copier itself would pass over the tag of a
        # development version); a project copied from elsewhere: that template's latest.
        copier.run_update(
            folder, defaults=True, overwrite=True, unsafe=True, vcs_ref=tag if ours else None
        )
    typer.echo(f"{folder.as_posix()}: updated from mcpmint's project template")


@app.callback(invoke_without_command=True)
def main(
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
) -> None:
    if version:
        typer.echo(f"mcpmint {__version__}")
        raise typer.Exit(EXIT_OK)


def entry() -> None:
    """The `mcpmint` command (and `python -m mcpmint`)."""
    # Each command is one short process that builds large trees of dicts, lists and frozen
    # dataclasses holding no reference cycles: the cyclic garbage collector would only walk
    # them again and again (a seventh of a cold run on GitHub's spec, a sixth of a run after
    # an edit, for the same peak memory: benchmarks/regen.py). Reference counting still
    # frees everything as usual; the forked children inherit the setting.
    gc.disable()
    app()


if __name__ == "__main__":  # pragma: no cover
    entry()
