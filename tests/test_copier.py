"""The copier template (copier.yml, templates/project) and `mcpmint init`, for real: the
template committed to a git repository in a temporary folder and tagged, `copier copy`,
the generated project's own tests, then `copier update` to a second tagged version."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mcpmint.cli import app, template_path
from tests.support import GIT_ENV, REPO, clean_env, run

copier = pytest.importorskip("copier")

# Copier clones a checkout that is a git repository and adds its uncommitted changes, with a
# warning: expected while developing this repository.
dirty_checkout_ok = pytest.mark.filterwarnings("ignore::copier.errors.DirtyLocalWarning")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        env=clean_env(**GIT_ENV),
    )
    return done.stdout


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@contextmanager
def mcpmint_on_path() -> Iterator[None]:
    """The template's task runs `mcpmint generate`: this checkout's, from this venv.
    (copier runs tasks in plumbum's copy of the environment.)"""
    from plumbum import local

    scripts = [sysconfig.get_path("scripts"), str(Path(sys.executable).parent)]
    with local.env(PATH=os.pathsep.join([*scripts, local.env.get("PATH", "")]), **GIT_ENV):
        yield


def template_repo(folder: Path) -> Path:
    """This repository's copier template, alone in a git repository, tagged v1."""
    folder.mkdir()
    shutil.copy2(REPO / "copier.yml", folder / "copier.yml")
    shutil.copytree(REPO / "templates" / "project", folder / "templates" / "project")
    git(folder, "init", "-q", "-b", "main")
    commit_all(folder, "template v1")
    git(folder, "tag", "v1")
    return folder


def test_copier_copy_generates_a_project_whose_tests_pass_and_update_keeps_user_edits(
    tmp_path: Path,
) -> None:
    template = template_repo(tmp_path / "template")
    project = tmp_path / "petstore-server"
    project.mkdir()
    shutil.copy2(REPO / "specs" / "petstore.yaml", project / "petstore.yaml")

    with mcpmint_on_path():
        copier.run_copy(
            str(template),
            project,
            defaults=True,
            data={"spec": "petstore.yaml", "transport": "http"},
            unsafe=True,
            vcs_ref="v1",
        )

    # The scaffold from the template, the rest from `mcpmint generate` (the task).
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["_commit"] == "v1"
    assert answers["namespace"] == "petstore"
    assert answers["package"] == "petstore_mcp"
    assert answers["transport"] == "http"
    config = yaml.safe_load((project / "mcpmint.yaml").read_text())
    assert config == {
        "server": {"name": "petstore-mcp", "package": "petstore_mcp"},
        "sources": [{"spec": "petstore.yaml", "namespace": "petstore"}],
    }
    readme = (project / "README.md").read_text()
    assert "created from mcpmint's copier" in readme  # copier's README won
    assert "pre-commit install" in readme
    hooks = yaml.safe_load((project / ".pre-commit-config.yaml").read_text())
    assert [h["id"] for h in hooks["repos"][0]["hooks"]] == ["mcpmint-generate"]
    for name in (
        "pyproject.toml",
        "tests/test_custom.py",
        "tests/test_generated.py",
        "tools.lock.json",
        "src/petstore_mcp/server.py",
        ".mcpmint/manifest.json",
    ):
        assert (project / name).is_file(), name
    assert not (project / ".env.example").exists()  # auth: none

    tests = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env=clean_env(PYTHONPATH="src"),
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert " passed" in tests.stdout

    # The project under version control, a user edit in a scaffold file.
    git(project, "init", "-q", "-b", "main")
    commit_all(project, "new server")
    (project / "README.md").write_text(readme + "\nOur team's notes: ask #pets before deploying.\n")
    commit_all(project, "our notes")

    # A second template version.
    readme_template = template / "templates" / "project" / "README.md.jinja"
    readme_template.write_text(
        readme_template.read_text().replace(
            "## Test it\n", "## Test it\n\nTemplate v2 says: run the tests before a release.\n"
        )
    )
    commit_all(template, "template v2")
    git(template, "tag", "v2")

    with mcpmint_on_path():
        copier.run_update(project, defaults=True, unsafe=True, overwrite=True)

    readme = (project / "README.md").read_text()
    assert "Template v2 says: run the tests before a release." in readme
    assert "Our team's notes: ask #pets before deploying." in readme
    assert "<<<<<<<" not in readme
    assert yaml.safe_load((project / ".copier-answers.yml").read_text())["_commit"] == "v2"
    # The generated output is still current (the task ran `mcpmint generate` again).
    check = run(
        [sys.executable, "-m", "mcpmint", "generate", "--check"], cwd=project, env=clean_env()
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_copier_template_jwt_answers_and_validation(tmp_path: Path) -> None:
    template = template_repo(tmp_path / "template")
    project = tmp_path / "p"
    with mcpmint_on_path():
        copier.run_copy(
            str(template),
            project,
            defaults=True,
            data={"spec": "api.yaml", "namespace": "acme", "auth": "jwt"},
            unsafe=True,
            skip_tasks=True,
        )
    assert "ACME_AUTH=jwt" in (project / ".env.example").read_text()
    assert "ACME_JWKS_URL" in (project / "README.md").read_text()
    assert ".env" in (project / ".gitignore").read_text().split()
    with pytest.raises(ValueError, match="namespace"):
        copier.run_copy(
            str(template),
            tmp_path / "q",
            defaults=True,
            data={"spec": "api.yaml", "namespace": "Not-Valid"},
            unsafe=True,
            skip_tasks=True,
        )


def test_template_path_is_the_checkout_root() -> None:
    assert template_path() == REPO
    assert (template_path() / "templates" / "project" / "mcpmint.yaml.jinja").is_file()


@dirty_checkout_ok
def test_mcpmint_init_copies_the_spec_and_generates(tmp_path: Path) -> None:
    project = tmp_path / "new-server"
    result = CliRunner().invoke(
        app,
        [
            "init",
            str(project),
            "--spec",
            str(REPO / "specs" / "petstore.yaml"),
            "--defaults",
            "-d",
            "namespace=pets",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (project / "petstore.yaml").read_bytes() == (REPO / "specs/petstore.yaml").read_bytes()
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["spec"] == "petstore.yaml"
    assert answers["distribution"] == "pets-mcp"
    assert (project / "src" / "pets_mcp" / "server.py").is_file()
    check = run(
        [sys.executable, "-m", "mcpmint", "generate", "--check"], cwd=project, env=clean_env()
    )
    assert check.returncode == 0, check.stdout + check.stderr


@dirty_checkout_ok
def test_mcpmint_init_bad_answers_exit_2(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["init", str(tmp_path / "a"), "--defaults", "-d", "oops"])
    assert result.exit_code == 2
    result = runner.invoke(
        app, ["init", str(tmp_path / "b"), "--spec", str(tmp_path / "missing.yaml")]
    )
    assert result.exit_code == 2
    result = runner.invoke(
        app, ["init", str(tmp_path / "c"), "--defaults", "-d", "namespace=Bad", "-d", "spec=x.y"]
    )
    assert result.exit_code == 2
    assert "namespace" in result.output
