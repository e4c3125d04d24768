"""The project template as copier can update from it: a git repository kept by mcpmint.

`copier update` needs the template version a project was made from, as a git reference it
can check out again (the `_commit` of `.copier-answers.yml`). The template inside an installed
mcpmint is a plain folder, which has none, so `mcpmint init` and `mcpmint update` copy it
into a git repository in the user's data folder ($MCPMINT_TEMPLATE_REPO, else
$XDG_DATA_HOME/mcpmint/template, else ~/.local/share/mcpmint/template), one commit per
distinct template, tagged `v<mcpmint's version>`; copier copies from that repository and
records the tag. After an upgrade of mcpmint, `mcpmint update` (or `mcpmint init`) adds the new
template as a new commit, and `copier update` merges the change into the project.

Commits have a fixed author and date: the same template gives the same commit on every
machine, and a repository lost and made again gives the same references.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from packaging.version import InvalidVersion, Version

_ENV = {
    "GIT_AUTHOR_NAME": "mcpmint",
    "GIT_AUTHOR_EMAIL": "mcpmint@localhost",
    "GIT_COMMITTER_NAME": "mcpmint",
    "GIT_COMMITTER_EMAIL": "mcpmint@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


class TemplateRepoError(Exception):
    """The repository could not be made or updated (no git, an unwritable folder)."""


def repo_folder() -> Path:
    if explicit := os.environ.get("MCPMINT_TEMPLATE_REPO"):
        return Path(explicit)
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "mcpmint" / "template"


def _git(repo: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", *args],
            cwd=repo,
            capture_output=True,
            text=True,
            env={**os.environ, **_ENV},
            check=False,
        )
    except OSError as exc:
        raise TemplateRepoError(f"git is needed to keep the project template: {exc}") from None
    if done.returncode != 0:
        raise TemplateRepoError(f"git {' '.join(args)} in {repo}: {done.stderr.strip()}")
    return done.stdout.strip()


def _tag(version: str) -> str:
    """`v<version>` when it is a PEP 440 version copier can compare, else `v0.0.0`."""
    try:
        return f"v{Version(version)}"
    except InvalidVersion:
        return "v0.0.0"


def sync(template: Path, version: str, repo: Path | None = None) -> tuple[Path, str]:
    """The repository holding `template` (a folder with copier.yml and templates/project)
    at its last commit, and that commit's tag; made or updated as needed."""
    repo = repo or repo_folder()
    try:
        repo.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TemplateRepoError(f"cannot create {repo}: {exc}") from None
    if not (repo / ".git").exists():
        _git(repo, "init", "-q", "-b", "main")
    for name in ("copier.yml", "templates"):
        target = repo / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    shutil.copy2(template / "copier.yml", repo / "copier.yml")
    shutil.copytree(template / "templates" / "project", repo / "templates" / "project")
    _git(repo, "add", "-A")
    if _git(repo, "status", "--porcelain"):
        _git(repo, "commit", "-q", "-m", f"mcpmint {version}: the project template")
    head = _git(repo, "rev-parse", "HEAD")
    tag = _tag(version)
    local = "." if "+" in tag else "+"
    here = _git(repo, "tag", "--points-at", head).split()
    for name in here:
        if name == tag or name.startswith(tag + local):
            return repo, name
    if _git(repo, "tag", "--list", tag):
        # The same version with another template (a development build): a later local
        # version of it, which copier orders after the first.
        number = 1
        while _git(repo, "tag", "--list", f"{tag}{local}{number}"):
            number += 1
        tag = f"{tag}{local}{number}"
    _git(repo, "tag", tag, head)
    return repo, tag
