"""The pre-commit hooks of `.pre-commit-hooks.yaml`: `python -m mcpmint.hooks_cli MODE [CONFIG...]`.

- `generate`: for each project, the quick check of `mcpmint generate --check` (inputs and
  generated files unchanged since the last run: nothing loaded or built); when it cannot
  confirm, one `mcpmint generate`, and exit 1 when that changed the project's manifest, so the
  commit stops with the regenerated files left modified in the working tree (as formatters
  do): review them, `git add`, commit again. A run that regenerates nothing but the manifest's
  record of its inputs (a spec edit that changes no output, another mcpmint) stops the commit
  once too: the hooks are quick again once it is committed.
- `check`: the same quick check, and `mcpmint generate --check` only when it cannot confirm;
  exit 1 when any project is stale.

The projects are the CONFIG arguments (an `mcpmint.yaml`, or a folder holding one); without
any, every `mcpmint.yaml` / `mcpmint.yml` / `*.mcpmint.yaml` that git tracks (falling back to
`./mcpmint.yaml`). A bad input or a refusal of `generate` (hand edits, breaking changes) fails
the hook with `mcpmint`'s own message and exit code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

MODES = ("generate", "check")
_PATTERNS = ("mcpmint.yaml", "mcpmint.yml", "*.mcpmint.yaml", "*/mcpmint.yaml", "*/mcpmint.yml")


def _mcpmint(*args: str) -> int:
    return subprocess.run([sys.executable, "-m", "mcpmint", *args], check=False).returncode


def projects(arguments: Sequence[str]) -> list[str]:
    """The configs to check: the arguments, or the ones git tracks, or ./mcpmint.yaml."""
    if arguments:
        return list(arguments)
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--", *_PATTERNS],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        listed = ""
    found = sorted({name for name in listed.split("\0") if name})
    if found:
        return found
    return ["mcpmint.yaml"] if Path("mcpmint.yaml").is_file() else []


def run(mode: str, arguments: Sequence[str]) -> int:
    configs = projects(arguments)
    if not configs:
        print("mcpmint: no mcpmint.yaml found; nothing to do", file=sys.stderr)
        return 0
    status = 0
    for config in configs:
        code = _check(config) if mode == "check" else _generate(config)
        status = max(status, code)
    return status


def _check(config: str) -> int:
    """The `check` hook for one project: 0 when the quick check confirms it is up to date,
    else `mcpmint generate --check` (which says what is stale, and exits 1 when anything is)."""
    fresh, _ = _quick_check(config)
    if fresh:
        print(f"{config}: up to date (inputs unchanged)")
        return 0
    return _mcpmint("generate", "--check", config)


def _generate(config: str) -> int:
    """The `generate` hook for one project: 0 when it is up to date, else `mcpmint generate`
    once, and 1 when that changed the project's manifest (or `generate`'s own failure)."""
    from mcpmint.write.files import MANIFEST

    fresh, folder = _quick_check(config)
    if fresh:
        print(f"{config}: up to date (inputs unchanged)")
        return 0
    manifest = folder / MANIFEST if folder is not None else None
    before = _text(manifest)
    code = _mcpmint("generate", "-q", config)  # one run: a `--check` first would be a second
    after = _text(manifest)
    if code != 0 or after == before:
        return code
    if _files(after) == _files(before):
        print(
            f"mcpmint: refreshed the record of the inputs in {config}'s {MANIFEST} (no "
            "generated file changed); `git add` it and commit again",
            file=sys.stderr,
        )
    else:
        print(
            f"mcpmint: regenerated the project of {config}; review the changes, `git add` "
            "them and commit again",
            file=sys.stderr,
        )
    return 1


def _quick_check(config: str) -> tuple[bool, Path | None]:
    """Whether the quick check of `mcpmint generate --check` confirms `config`'s project is up
    to date, and the folder it generates into (None when the config cannot be read: `mcpmint
    generate` then says why). Made here, not in a subprocess: the quick check is what most
    commits need, and a second process would only start the same imports again."""
    from mcpmint.config import load_config
    from mcpmint.diagnostics import DiagnosticSink
    from mcpmint.write.quickcheck import GenerateOptions, up_to_date

    try:
        # Unchecked: the quick check confirms only a config whose bytes a run checked.
        loaded = load_config(Path(config), DiagnosticSink(), checked=False)
        if loaded is None:
            return False, None
        return up_to_date(loaded, GenerateOptions(output=None, check=True)), loaded.folder
    except Exception:  # anything unexpected: the real run reports it
        return False, None


def _text(path: Path | None) -> str | None:
    """The text of `path` (None: no path, or no readable file)."""
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _files(manifest: str | None) -> object:
    """The generated files and their hashes a manifest lists (anything else: itself)."""
    try:
        return json.loads(manifest or "")["files"]
    except (ValueError, KeyError, TypeError):
        return manifest


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in MODES:
        print(
            f"usage: python -m mcpmint.hooks_cli {{{'|'.join(MODES)}}} [CONFIG...]", file=sys.stderr
        )
        return 2
    return run(args[0], args[1:])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
