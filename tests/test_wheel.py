"""mcpmint as a user installs it: the sdist and wheel built from a tagged git tree, checked
by twine, installed with a plain `pip install` in a fresh virtual environment; there `mcpmint
init` makes a project (copier comes with mcpmint), whose `repo: local` pre-commit hook runs
the installed mcpmint with no remote and no package index, and whose own tests pass."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from .support import GIT_ENV, REPO, clean_env, make_venv, run

pytestmark = pytest.mark.slow

TAG = "9.8.7"


def _tree(folder: Path, tagged: bool) -> Path:
    """This checkout's files as they are now (tracked and new ones git would see), in a git
    repository of their own tagged v9.8.7, or with no git history at all."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file() and not source.is_symlink() and not name.startswith("tests/golden"):
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name)
    if tagged:
        env = clean_env(**GIT_ENV)
        for command in (
            ["init", "-q", "-b", "main"],
            ["add", "-A"],
            ["-c", "commit.gpgsign=false", "commit", "-q", "-m", "release"],
            ["-c", "tag.gpgsign=false", "tag", f"v{TAG}"],
        ):
            subprocess.run(["git", *command], cwd=folder, env=env, check=True)
    return folder


def _build(source: Path, dist: Path, *what: str) -> None:
    built = run([sys.executable, "-m", "build", *what, "--outdir", str(dist), str(source)])
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]


def test_release_artifacts_install_and_work_as_documented(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _build(_tree(tmp_path / "src", tagged=True), dist)  # the sdist, then the wheel from it
    wheel = next(dist.glob("*.whl"))
    sdist = next(dist.glob("*.tar.gz"))
    assert wheel.name.startswith(f"mcpmint-{TAG}-") and sdist.name == f"mcpmint-{TAG}.tar.gz"
    checked = run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    names = zipfile.ZipFile(wheel).namelist()
    for name in (
        "mcpmint/templates/package/server.py.jinja",
        "mcpmint/runtime/server.py",
        "mcpmint/copier.yml",
        "mcpmint/templates/project/mcpmint.yaml.jinja",
    ):
        assert name in names, name
    metadata = zipfile.ZipFile(wheel).read(f"mcpmint-{TAG}.dist-info/METADATA").decode()
    assert "Requires-Dist: copier" in metadata
    assert "Project-URL: Source, https://github.com/mcpmint/mcpmint" in metadata
    with tarfile.open(sdist) as archive:
        in_sdist = archive.getnames()
    for name in ("CHANGELOG.md", ".pre-commit-hooks.yaml", "copier.yml", "README.md"):
        assert f"mcpmint-{TAG}/{name}" in in_sdist, name

    # A plain install: `mcpmint init` needs nothing else.
    python = make_venv(tmp_path / "venv", str(wheel))
    bin_dir = python.parent
    version = run([str(bin_dir / "mcpmint"), "--version"], env=clean_env())
    assert version.stdout.strip() == f"mcpmint {TAG}"
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy2(REPO / "specs" / "petstore.yaml", work / "petstore.yaml")
    # Run from a folder outside the checkout, so nothing can be found there by accident.
    env = clean_env(
        XDG_DATA_HOME=str(tmp_path / "data"),
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
        PATH=f"{bin_dir}:{clean_env()['PATH']}",  # the venv active, as the README says
        **GIT_ENV,
    )
    made = run(
        [str(bin_dir / "mcpmint"), "init", "server", "--spec", "petstore.yaml", "--defaults"],
        cwd=work,
        env=env,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    project = work / "server"
    assert "repo: local" in (project / ".pre-commit-config.yaml").read_text()

    # The repo: local hook, on the installed mcpmint: a spec edit regenerates on commit.
    def git(*args: str) -> str:
        done = run(["git", "-c", "commit.gpgsign=false", *args], cwd=project, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    git("init", "-q", "-b", "main")
    git("add", "-A")
    installed = run([sys.executable, "-m", "pre_commit", "install"], cwd=project, env=env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    git("commit", "-q", "-m", "new server")
    spec = project / "petstore.yaml"
    spec.write_text(spec.read_text().replace("summary: List all pets", "summary: List pets"))
    git("add", "petstore.yaml")
    refused = run(["git", "commit", "-q", "-m", "wording"], cwd=project, env=env)
    assert refused.returncode != 0 and "regenerated the project" in refused.stderr, refused
    assert "List pets" in (project / "tools.lock.json").read_text()
    git("add", "-A")
    git("commit", "-q", "-m", "wording")

    # The generated package installed as its README says; its own tests pass.
    server_python = make_venv(tmp_path / "server-venv", "-e", f"{project}[test]")
    tested = run(
        [str(server_python), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env=clean_env(),
    )
    assert tested.returncode == 0, tested.stdout[-4000:] + tested.stderr[-2000:]


def test_a_tree_without_git_history_builds_with_the_fallback_version(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _build(_tree(tmp_path / "src", tagged=False), dist, "--wheel")
    assert next(dist.glob("*.whl")).name.startswith("mcpmint-0.1.0-")
