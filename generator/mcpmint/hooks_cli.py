"""The pre-commit hooks of `.pre-commit-hooks.yaml`: `python -m mcpmint.hooks_cli MODE [CONFIG...]`.

- `generate`: for each project, `mcpmint generate --check`; when that reports the output
  stale, `mcpmint generate`, and exit 1 so the commit stops with the regenerated files left
  modified in the working tree (as formatters do): review them, `git add`, commit again.
- `check`: `mcpmint generate --check` only; exit 1 when any project is stale.

The projects are the CONFIG arguments (an `mcpmint.yaml`, or a folder holding one); without
any, every `mcpmint.yaml` / `mcpmint.yml` / `*.mcpmint.yaml` that git tracks (falling back to
`./mcpmint.yaml`). A bad input or a refusal of `generate` (hand edits, breaking changes) fails
the hook with `mcpmint`'s own message and exit code.
"""

from __future__ import annotations

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
        code = _mcpmint("generate", "--check", config)
        if code == 0:
            continue
        if mode == "check" or code != 1:
            status = max(status, code)
            continue
        code = _mcpmint("generate", config)
        if code != 0:
            status = max(status, code)
            continue
        print(
            f"mcpmint: regenerated the project of {config}; review the changes, `git add` "
            "them and commit again",
            file=sys.stderr,
        )
        status = max(status, 1)
    return status


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
