"""The copier template (copier.yml, templates/project) and `mcpmint init`, for real: the
template committed to a git repository in a temporary folder and tagged, `copier copy`,
the generated project's own tests, then `copier update` to a second tagged version."""

from __future__ import annotations

import os
import re
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
README_TEMPLATE = "{% if namespace %}README.md{% endif %}.jinja"
# The task's message (a line of its own; copier also echoes the task's command line).
NOT_YET = re.compile(r"^mcpmint: \S+ is not in the project yet", re.MULTILINE)


@pytest.fixture(autouse=True)
def template_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where `mcpmint init` and `update` keep the template's git repository: here, not in
    the user's data folder."""
    repo = tmp_path / "mcpmint-template"
    monkeypatch.setenv("MCPMINT_TEMPLATE_REPO", str(repo))
    return repo


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


@pytest.mark.slow  # runs a generated package's own tools: seconds
def test_copier_copy_generates_a_project_whose_tests_pass_and_update_keeps_user_edits(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
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
            data={"spec": "petstore.yaml", "namespace": "petstore", "transport": "http"},
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
    readme_template = template / "templates" / "project" / README_TEMPLATE
    readme_template.write_text(
        readme_template.read_text().replace(
            "## Test it\n", "## Test it\n\nTemplate v2 says: run the tests before a release.\n"
        )
    )
    commit_all(template, "template v2")
    git(template, "tag", "v2")

    with mcpmint_on_path():
        copier.run_update(project, defaults=True, unsafe=True, overwrite=True)
    # The task ran in copier's scratch replays too, where no spec is: nothing said there.
    assert not NOT_YET.search(capfd.readouterr().err)

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


def test_a_copy_without_its_spec_says_what_to_do(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    template = template_repo(tmp_path / "template")
    with mcpmint_on_path():
        copier.run_copy(str(template), tmp_path / "p", defaults=True, unsafe=True, vcs_ref="v1")
    assert NOT_YET.search(capfd.readouterr().err)
    assert not (tmp_path / "p" / "src").exists()


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


LENDING = """openapi: "3.0.3"
info: {title: Lending Library API, version: "1"}
servers: [{url: "https://library.example.com"}]
paths:
  /loans/{loanId}:
    get:
      operationId: getLoan
      parameters: [{name: loanId, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
"""


def _lock_tools(folder: Path) -> list[str]:
    import json

    return sorted(json.loads((folder / "tools.lock.json").read_text())["tools"])


def test_generate_init_and_copier_copy_choose_one_namespace(tmp_path: Path) -> None:
    """The spec's title decides, whatever its file is called (naming it `library.yaml` gave
    `library_*` from init and `openapi_*` from copier's default spec name)."""
    runner = CliRunner()
    spec = tmp_path / "library.yaml"
    spec.write_text(LENDING)

    generated = tmp_path / "generated"
    result = runner.invoke(app, ["generate", str(spec), "-o", str(generated)])
    assert result.exit_code == 0, result.output

    initialised = tmp_path / "initialised"
    result = runner.invoke(app, ["init", str(initialised), "--spec", str(spec), "--defaults"])
    assert result.exit_code == 0, result.output
    answers = yaml.safe_load((initialised / ".copier-answers.yml").read_text())
    assert (answers["namespace"], answers["distribution"]) == ("lending", "lending-mcp")

    copied = tmp_path / "copied"
    copied.mkdir()
    (copied / "openapi.yaml").write_text(LENDING)
    with mcpmint_on_path():
        copier.run_copy(
            str(template_repo(tmp_path / "template")),
            copied,
            defaults=True,
            unsafe=True,
            vcs_ref="v1",
        )
    config = yaml.safe_load((copied / "mcpmint.yaml").read_text())
    assert config == {"sources": [{"spec": "openapi.yaml"}]}  # generate decides, by the title
    assert "LENDING_BASE_URL" in (copied / "README.md").read_text()  # generate's README

    names = [_lock_tools(folder) for folder in (generated, initialised, copied)]
    assert names[0] == names[1] == names[2] == ["lending_get_loan"]


def test_init_records_a_template_version_that_mcpmint_update_updates_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """`copier update` needs the template version a project was made from: init records a
    tag of the template repository mcpmint keeps, and `mcpmint update` after an upgrade of
    mcpmint (a changed template, a new version) merges the change into the user's edits."""
    import mcpmint.cli as cli

    project = tmp_path / "server"
    runner = CliRunner()
    result = runner.invoke(
        app, ["init", str(project), "--spec", str(REPO / "specs" / "petstore.yaml"), "--defaults"]
    )
    assert result.exit_code == 0, result.output
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["_commit"].startswith("v")
    assert answers["_src_path"] == str(tmp_path / "mcpmint-template")
    git(project, "init", "-q", "-b", "main")
    readme = (project / "README.md").read_text()
    (project / "README.md").write_text(readme + "\nOur notes: ask #pets first.\n")
    commit_all(project, "new server")
    # Plain `copier update` works on what init made (it failed: "cannot obtain old template
    # references from .copier-answers.yml").
    with mcpmint_on_path():
        copier.run_update(project, defaults=True, overwrite=True, unsafe=True)
    assert git(project, "status", "--porcelain") == ""

    # mcpmint upgraded: another template under a higher version.
    upgraded = tmp_path / "upgraded"
    upgraded.mkdir()
    shutil.copy2(REPO / "copier.yml", upgraded / "copier.yml")
    shutil.copytree(REPO / "templates" / "project", upgraded / "templates" / "project")
    readme_template = upgraded / "templates" / "project" / README_TEMPLATE
    readme_template.write_text(
        readme_template.read_text().replace("## Test it\n", "## Test it\n\nTemplate 99 says hi.\n")
    )
    monkeypatch.setattr(cli, "template_path", lambda: upgraded)
    monkeypatch.setattr(cli, "__version__", "99.0.0")
    capfd.readouterr()
    result = runner.invoke(app, ["update", str(project)])
    assert result.exit_code == 0, result.output
    readme = (project / "README.md").read_text()
    assert "Template 99 says hi." in readme and "Our notes: ask #pets first." in readme
    assert yaml.safe_load((project / ".copier-answers.yml").read_text())["_commit"] == "v99.0.0"
    assert not NOT_YET.search(capfd.readouterr().err)
    check = run(
        [sys.executable, "-m", "mcpmint", "generate", "--check"], cwd=project, env=clean_env()
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_update_outside_a_copier_project_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["update", str(tmp_path)])
    assert result.exit_code == 2
    assert "no .copier-answers.yml" in result.output
