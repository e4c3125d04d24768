"""The pre-commit hooks (.pre-commit-hooks.yaml), for real: a git repository in a temporary
folder holding a generated project whose .pre-commit-config.yaml uses this repository's
hooks. pre-commit needs the hooks at a git revision, so the files mcpmint is built from
(pyproject.toml, README.md, copier.yml, .pre-commit-hooks.yaml, generator/, templates/,
specs/*.schema.json), working-tree state included, are committed to a second temporary
repository; pre-commit installs mcpmint from it into its own environment (slow: a pip install
with mcpmint's dependencies), exactly as a user's project gets it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcpmint import hooks_cli
from mcpmint.hooks_cli import main as hooks_main
from tests.support import GIT_ENV, REPO, clean_env, run

HOOK_FILES = ("pyproject.toml", "README.md", "copier.yml", ".pre-commit-hooks.yaml")
HOOK_TREES = ("generator", "templates")


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        env=env or clean_env(**GIT_ENV),
    )
    return done.stdout


def hooks_repo(folder: Path) -> tuple[Path, str]:
    """mcpmint's sources at a commit of a scratch repository: (its path, the commit)."""
    folder.mkdir()
    for name in HOOK_FILES:
        shutil.copy2(REPO / name, folder / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in HOOK_TREES:
        shutil.copytree(REPO / name, folder / name, ignore=ignore)
    (folder / "specs").mkdir()
    for schema in (REPO / "specs").glob("*.schema.json"):  # the wheel force-includes them
        shutil.copy2(schema, folder / "specs")
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "mcpmint")
    return folder, git(folder, "rev-parse", "HEAD").strip()


def generate_project(project: Path, spec: str) -> None:
    """A project as `mcpmint init` leaves it: mcpmint.yaml, generated from that config
    (`generate SPEC -o .` writes the config; `generate` then records it as the input)."""
    for args in (["generate", spec, "-o", "."], ["generate"]):
        done = run([sys.executable, "-m", "mcpmint", *args], cwd=project, env=clean_env())
        assert done.returncode == 0, done.stdout + done.stderr


def test_hooks_file_declares_both_hooks() -> None:
    import yaml

    hooks = {
        hook["id"]: hook for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    }
    assert set(hooks) == {"mcpmint-generate", "mcpmint-check"}
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["pass_filenames"] is False
    import re

    pattern = re.compile(hooks["mcpmint-check"]["files"])
    for name in ("openapi.yaml", "api/spec.json", "mcpmint.yaml", "sub/mcpmint.yml"):
        assert pattern.search(name), name
    assert not pattern.search("src/pkg/server.py")


def test_hooks_cli_without_project_does_nothing_and_usage_is_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert hooks_main(["check"]) == 0
    assert hooks_main([]) == 2
    assert hooks_main(["nonsense"]) == 2


def test_hooks_cli_generate_regenerates_and_fails_then_passes(tmp_path: Path) -> None:
    """The hook's logic without pre-commit: stale -> regenerate, exit 1; then exit 0."""
    project = tmp_path / "project"
    shutil.copytree(REPO / "specs", tmp_path / "specs", ignore=shutil.ignore_patterns("invalid"))
    project.mkdir()
    generate_project(project, "../specs/petstore.yaml")
    hook = [sys.executable, "-m", "mcpmint.hooks_cli"]
    assert run([*hook, "check", "mcpmint.yaml"], cwd=project, env=clean_env()).returncode == 0
    spec = tmp_path / "specs" / "petstore.yaml"
    spec.write_text(spec.read_text().replace("summary: List all pets", "summary: List pets"))
    assert run([*hook, "check", "mcpmint.yaml"], cwd=project, env=clean_env()).returncode == 1
    done = run([*hook, "generate", "mcpmint.yaml"], cwd=project, env=clean_env())
    assert done.returncode == 1
    assert "regenerated" in done.stderr
    assert "List pets" in (project / "tools.lock.json").read_text()
    done = run([*hook, "generate", "mcpmint.yaml"], cwd=project, env=clean_env())
    assert done.returncode == 0 and "up to date (inputs unchanged)" in done.stdout


def test_the_hooks_run_the_pipeline_at_most_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fresh: the quick check alone, in the hook's process (no `mcpmint` started), for both
    hooks. Stale: one `mcpmint generate --check` for the check hook, one `mcpmint generate`
    for the generate hook, no `--check` before it (that was a second whole run)."""
    project = tmp_path / "project"
    shutil.copytree(REPO / "specs", tmp_path / "specs", ignore=shutil.ignore_patterns("invalid"))
    project.mkdir()
    generate_project(project, "../specs/petstore.yaml")
    calls: list[tuple[str, ...]] = []
    real = hooks_cli._mcpmint

    def counting(*args: str) -> int:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(hooks_cli, "_mcpmint", counting)
    monkeypatch.chdir(project)
    assert hooks_main(["generate", "mcpmint.yaml"]) == 0
    assert calls == [] and "up to date (inputs unchanged)" in capsys.readouterr().out
    assert hooks_main(["check", "mcpmint.yaml"]) == 0
    assert calls == [] and "mcpmint.yaml: up to date" in capsys.readouterr().out
    spec = tmp_path / "specs" / "petstore.yaml"
    spec.write_text(spec.read_text().replace("summary: List all pets", "summary: List pets"))
    assert hooks_main(["check", "mcpmint.yaml"]) == 1
    assert calls == [("generate", "--check", "mcpmint.yaml")]
    calls.clear()
    assert hooks_main(["generate", "mcpmint.yaml"]) == 1
    assert calls == [("generate", "-q", "mcpmint.yaml")]
    assert "regenerated the project" in capsys.readouterr().err
    assert hooks_main(["generate", "mcpmint.yaml"]) == 0 and len(calls) == 1


# What the hooks' quick check (every commit) does without: the pipeline's stages, jsonschema
# (a config whose bytes a run checked is not checked again) and the runtime's search.
_NOT_IMPORTED = (
    "mcpmint.pipeline",
    "mcpmint.render.templates",
    "jinja2",
    "jsonschema",
    "mcpmint.runtime.modes",
    # The version is a constant the build wrote (mcpmint/_version.py), not package metadata.
    "importlib.metadata",
)


def test_the_hooks_quick_check_imports_little_and_trusts_only_a_config_a_run_checked(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    shutil.copytree(REPO / "specs", tmp_path / "specs", ignore=shutil.ignore_patterns("invalid"))
    project.mkdir()
    generate_project(project, "../specs/petstore.yaml")
    probe = (
        "import sys\n"
        "from mcpmint.hooks_cli import main\n"
        "print('exit', main(sys.argv[1:]))\n"
        f"print([m for m in {_NOT_IMPORTED!r} if m in sys.modules])"
    )
    for mode in ("generate", "check"):
        done = run(
            [sys.executable, "-c", probe, mode, "mcpmint.yaml"], cwd=project, env=clean_env()
        )
        assert done.stdout.splitlines()[-2:] == ["exit 0", "[]"], done.stdout + done.stderr
    # A config the schema refuses (an unknown key) is new bytes: the quick check declines, and
    # the run that follows checks it and says what is wrong; nothing is written.
    config = project / "mcpmint.yaml"
    config.write_text(config.read_text() + "surprise: 1\n", encoding="utf-8")
    manifest = (project / ".mcpmint" / "manifest.json").read_text()
    for mode in ("check", "generate"):
        done = run([sys.executable, "-m", "mcpmint.hooks_cli", mode], cwd=project, env=clean_env())
        assert done.returncode == 2, done.stdout + done.stderr
        assert "mcpmint.yaml:" in done.stderr and "surprise" in done.stderr
    assert (project / ".mcpmint" / "manifest.json").read_text() == manifest


def test_the_generate_hook_refreshes_a_stale_record_of_the_inputs_once(tmp_path: Path) -> None:
    """An input edit that changes no output (a comment in the project config; a spec's own
    bytes are shipped with the generated tests): the whole pipeline runs, finds every
    generated file as it was, and records the new inputs; the commit stops once so that the
    manifest is committed with the input, and the next run is quick (a check that writes
    nothing would have run the whole pipeline on every commit)."""
    project = tmp_path / "project"
    shutil.copytree(REPO / "specs", tmp_path / "specs", ignore=shutil.ignore_patterns("invalid"))
    project.mkdir()
    generate_project(project, "../specs/petstore.yaml")
    lock = (project / "tools.lock.json").read_text()
    config = project / "mcpmint.yaml"
    config.write_text(config.read_text() + "# a comment changes no tool\n")
    hook = [sys.executable, "-m", "mcpmint.hooks_cli", "generate", "mcpmint.yaml"]
    done = run(hook, cwd=project, env=clean_env())
    assert done.returncode == 1, done.stdout + done.stderr
    assert "refreshed the record of the inputs" in done.stderr
    assert (project / "tools.lock.json").read_text() == lock
    done = run(hook, cwd=project, env=clean_env())
    assert done.returncode == 0 and "up to date (inputs unchanged)" in done.stdout


@pytest.mark.slow
def test_precommit_hooks_regenerate_on_commit_and_check_a_clean_tree(tmp_path: Path) -> None:
    hooks, rev = hooks_repo(tmp_path / "mcpmint")
    project = tmp_path / "petstore-server"
    project.mkdir()
    shutil.copy2(REPO / "specs" / "petstore.yaml", project / "petstore.yaml")
    generate_project(project, "petstore.yaml")
    (project / ".pre-commit-config.yaml").write_text(
        "repos:\n"
        f"  - repo: {hooks.as_posix()}\n"
        f"    rev: {rev}\n"
        "    hooks:\n"
        "      - id: mcpmint-generate\n"
        "      - id: mcpmint-check\n"
        "        stages: [manual]\n"
    )
    env = clean_env(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), **GIT_ENV)
    precommit = [sys.executable, "-m", "pre_commit"]
    git(project, "init", "-q", "-b", "main", env=env)
    git(project, "add", "-A", env=env)
    installed = run([*precommit, "install"], cwd=project, env=env)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    # The hook's own mcpmint (installed from the hooks repository, a wheel) may record a
    # different generator identity in .mcpmint/manifest.json than this checkout did (the
    # identity digests mcpmint's installed files): let it bring the tree up to date first,
    # as a user would after `pre-commit install`.
    run([*precommit, "run", "--all-files"], cwd=project, env=env)
    git(project, "add", "-A", env=env)

    # The first commit: the output is current: it passes.
    first = run(["git", "commit", "-q", "-m", "new server"], cwd=project, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert git(project, "status", "--porcelain", env=env) == ""

    # A spec change: the hook regenerates, the commit fails, the regenerated files are left
    # modified (not staged) in the working tree.
    spec = project / "petstore.yaml"
    spec.write_text(spec.read_text().replace("summary: List all pets", "summary: List the pets"))
    git(project, "add", "petstore.yaml", env=env)
    second = run(["git", "commit", "-q", "-m", "spec: wording"], cwd=project, env=env)
    assert second.returncode != 0
    output = second.stdout + second.stderr
    assert "mcpmint generate" in output and "Failed" in output, output
    changed = git(project, "status", "--porcelain", env=env).splitlines()
    assert "M  petstore.yaml" in changed  # staged, not committed
    assert " M tools.lock.json" in changed, changed
    assert " M src/petstore_mcp/_generated/tools.json" in changed, changed
    assert "List the pets" in (project / "tools.lock.json").read_text()

    # Adding the regenerated files lets the commit through.
    git(project, "add", "-A", env=env)
    third = run(["git", "commit", "-q", "-m", "spec: wording"], cwd=project, env=env)
    assert third.returncode == 0, third.stdout + third.stderr
    assert git(project, "status", "--porcelain", env=env) == ""

    # The check hook passes on the clean tree ...
    check = [*precommit, "run", "mcpmint-check", "--hook-stage", "manual", "--all-files"]
    clean = run(check, cwd=project, env=env)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    # ... and fails, writing nothing, when the spec moved on.
    spec.write_text(spec.read_text().replace("summary: List the pets", "summary: Lists pets"))
    stale = run(check, cwd=project, env=env)
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert git(project, "status", "--porcelain", env=env) == " M petstore.yaml\n"
