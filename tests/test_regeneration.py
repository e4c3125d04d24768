"""Regeneration as a team lives it: real git repositories, a spec that changes, user edits that
must survive, and a tool surface that never changes without someone seeing it (R1-R5)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcpmint.pipeline import GenerateOptions
from mcpmint.write.cache import CACHE_DIR
from mcpmint.write.quickcheck import up_to_date

from .conftest import CORPUS
from .support import clean_env, run

CRAFTED = CORPUS / "crafted"
V1, V2 = CRAFTED / "petstore-plus.yaml", CRAFTED / "petstore-plus-v2.yaml"
PACKAGE = "server/src/petstore_mcp"


def mcpmint(repo: Path, *args: str, **env: str) -> tuple[int, str, str]:
    done = run([sys.executable, "-m", "mcpmint", *args], cwd=repo, env=clean_env(**env))
    return done.returncode, done.stdout, done.stderr


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, env=clean_env()
    )
    return done.stdout


def status(repo: Path) -> str:
    return git(repo, "status", "--porcelain")


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with spec.yaml (petstore-plus) and its server generated and committed."""
    folder = tmp_path / "repo"
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    git(folder, "config", "user.email", "dev@example.com")
    git(folder, "config", "user.name", "Dev")
    shutil.copy(V1, folder / "spec.yaml")
    code, _, stderr = mcpmint(folder, "generate", "spec.yaml", "-o", "server")
    assert code == 0, stderr
    commit(folder, "v1")
    return folder


def tool_names(repo: Path) -> list[str]:
    tools = json.loads((repo / PACKAGE / "_generated/tools.json").read_text(encoding="utf-8"))
    return [t["name"] for t in tools["tools"]]


def lock_of(repo: Path) -> dict[str, object]:
    data = json.loads((repo / "server/tools.lock.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


EXPECTED_V2_CHANGES = [
    ("breaking", "petstore_create_pet", "argument newly required", "tag"),
    ("review", "petstore_create_pet", "input schema changed", "changed: $defs"),
    ("review", "petstore_get_pet", "description changed", None),
    ("breaking", "petstore_list_categories", "tool removed", "GET /categories is no longer a tool"),
    ("breaking", "petstore_list_pets", "argument removed", "status"),
    ("review", "petstore_list_pets", "input schema changed", "changed: examples"),
    ("additive", "petstore_list_toys", "tool added", "new tool for GET /toys"),
    (
        "review",
        "petstore_update_pet",
        "argument schema changed",
        "argument body: changed: required",
    ),
    ("review", "petstore_update_pet", "input schema changed", "changed: $defs"),
]


@pytest.mark.slow  # runs a generated package's own tools: seconds
def test_spec_v2_is_refused_until_accepted_then_user_edits_survive_and_the_lock_moves(
    repo: Path,
) -> None:
    custom = repo / "server/tests/test_custom.py"
    custom.write_text(custom.read_text(encoding="utf-8") + "\n# my own test notes\n", "utf-8")
    # The extension points, edited as a team would: a business rule and a credential note.
    hooks, auth = repo / PACKAGE / "hooks.py", repo / PACKAGE / "auth.py"
    hooks.write_text(hooks.read_text(encoding="utf-8") + "\nOUR_RULE = 'ACME_'\n", "utf-8")
    auth.write_text(auth.read_text(encoding="utf-8") + "\n# keys come from vault\n", "utf-8")
    user_files = {path: path.read_bytes() for path in (hooks, auth)}
    (repo / "server/README.md").write_text("# Our petstore server\n", encoding="utf-8")
    shutil.copy(V2, repo / "spec.yaml")
    commit(repo, "user edits and spec v2")
    old_lock = lock_of(repo)

    code, stdout, stderr = mcpmint(repo, "generate", "spec.yaml", "-o", "server")
    assert code == 1, stdout + stderr
    assert "refusing to write" in stderr and "--accept-breaking" in stderr
    for what in ("petstore_list_categories: tool removed", "petstore_list_pets: argument removed"):
        assert what in stdout and what.split(":")[0] in stderr
    assert status(repo) == ""

    code, stdout, _ = mcpmint(repo, "diff", "server/tools.lock.json", "spec.yaml", "--json")
    assert code == 1
    report = json.loads(stdout)
    found = [(c["kind"], c["tool"], c["what"], c["detail"]) for c in report["changes"]]
    assert [f[:3] for f in found] == [e[:3] for e in EXPECTED_V2_CHANGES]
    for got, expected in zip(found, EXPECTED_V2_CHANGES, strict=True):
        assert expected[3] is None or got[3] == expected[3]
    assert "Always call this before updatePet" in found[2][3]
    assert report["summary"] == {"additive": 1, "breaking": 3, "review": 5}
    assert report["hash"]["old"] == old_lock["hash"] != report["hash"]["new"]
    # the two specs compare the same way as the lock and the new spec
    code, stdout2, _ = mcpmint(repo, "diff", str(V1), "spec.yaml", "--json")
    assert code == 1 and json.loads(stdout2)["changes"] == report["changes"]
    code, text, _ = mcpmint(repo, "diff", str(V1), "spec.yaml")
    assert code == 1 and text.index("breaking (3)") < text.index("review (5)")
    assert text.index("review (5)") < text.index("additive (1)")

    code, stdout, stderr = mcpmint(
        repo, "generate", "spec.yaml", "-o", "server", "--accept-breaking"
    )
    assert code == 0, stdout + stderr
    assert "tool surface changes" in stdout and "petstore_list_toys: tool added" in stdout
    assert "# my own test notes" in custom.read_text(encoding="utf-8")
    assert {path: path.read_bytes() for path in user_files} == user_files
    assert (repo / "server/README.md").read_text(encoding="utf-8") == "# Our petstore server\n"
    names = tool_names(repo)
    assert "petstore_list_toys" in names and "petstore_list_categories" not in names
    cache = repo / "server" / CACHE_DIR  # the previous runs' results, kept on purpose
    for path in (repo / "server").rglob("*"):
        if path.is_file() and path not in (custom, *user_files) and cache not in path.parents:
            assert "list_categories" not in path.read_text(encoding="utf-8"), path
    changed = git(repo, "status", "--porcelain").split("\n")
    assert " M server/tools.lock.json" in changed
    new_lock = lock_of(repo)
    assert new_lock["hash"] != old_lock["hash"]
    commit(repo, "regenerated")

    code, stdout, _ = mcpmint(repo, "generate", "spec.yaml", "-o", "server", "--check")
    assert code == 0 and "up to date (inputs unchanged)" in stdout
    spec = repo / "spec.yaml"
    spec.write_text(
        spec.read_text(encoding="utf-8").replace("summary: List pets", "summary: List every pet"),
        "utf-8",
    )
    code, stdout, _ = mcpmint(repo, "generate", "spec.yaml", "-o", "server", "--check")
    assert code == 1 and "out of date" in stdout and "tools.lock.json" in stdout
    assert "description changed" in stdout
    assert status(repo) == " M spec.yaml\n"


def test_R1_hand_edited_generated_file_is_refused_with_a_diff_then_forced(repo: Path) -> None:
    server_py = repo / PACKAGE / "server.py"
    server_py.write_text(server_py.read_text(encoding="utf-8") + "\nPATCHED = 1\n", "utf-8")
    commit(repo, "a hand edit")
    code, _, stderr = mcpmint(repo, "generate", "spec.yaml", "-o", "server", "--check")
    assert code == 1 and "edited by hand" in stderr  # the quick check falls back to a full run
    code, _, stderr = mcpmint(repo, "generate", "spec.yaml", "-o", "server")
    assert code == 1
    assert "edited by hand" in stderr and "+PATCHED = 1" in stderr and "--force" in stderr
    assert status(repo) == ""
    code, _, stderr = mcpmint(repo, "generate", "spec.yaml", "-o", "server", "--force")
    assert code == 0, stderr
    assert "PATCHED" not in server_py.read_text(encoding="utf-8")
    assert status(repo) == f" M {PACKAGE}/server.py\n"


def test_R2_removed_operation_is_breaking_and_needs_acceptance(repo: Path) -> None:
    spec = repo / "spec.yaml"
    text = spec.read_text(encoding="utf-8")
    start = text.index("  /users/{userId}/pets:")
    end = text.index("  /categories:")
    spec.write_text(text[:start] + text[end:], encoding="utf-8")
    commit(repo, "drop the users operation")
    before = lock_of(repo)
    removed = [name for name in before["tools"] if "user" in name]  # type: ignore[attr-defined]
    assert len(removed) == 1

    code, stdout, stderr = mcpmint(repo, "generate", "spec.yaml", "-o", "server")
    assert code == 1
    assert f"{removed[0]}: tool removed" in stdout and removed[0] in stderr
    assert status(repo) == ""  # the lock, like everything else, is not rewritten
    code, _, _ = mcpmint(repo, "diff", "server/tools.lock.json", "spec.yaml")
    assert code == 1

    code, _, stderr = mcpmint(repo, "generate", "spec.yaml", "-o", "server", "--accept-breaking")
    assert code == 0, stderr
    assert removed[0] not in lock_of(repo)["tools"]  # type: ignore[operator]
    assert removed[0] not in tool_names(repo)


def test_R5_generate_twice_is_byte_identical_and_tools_list_order_is_stable(
    repo: Path,
) -> None:
    # Nothing changed: the quick check answers, and writes nothing ...
    code, stdout, _ = mcpmint(repo, "generate", "spec.yaml", "-o", "server", PYTHONHASHSEED="7")
    assert code == 0 and "up to date (inputs unchanged)" in stdout
    assert status(repo) == ""
    # ... and the pipeline under another hash seed writes the same bytes.
    shutil.rmtree(repo / "server" / CACHE_DIR)
    (repo / "server" / "REFERENCE.md").unlink()  # a missing generated file: written again
    code, stdout, _ = mcpmint(repo, "generate", "spec.yaml", "-o", "server", PYTHONHASHSEED="7")
    assert code == 0 and "1 written" in stdout and "0 removed" in stdout, stdout
    assert status(repo) == ""
    code, _, _ = mcpmint(repo, "generate", "spec.yaml", "-o", "again", PYTHONHASHSEED="12345")
    assert code == 0

    def files(folder: Path) -> dict[str, bytes]:
        return {
            p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "manifest.json"
        }

    assert files(repo / "server") == files(repo / "again")
    names = tool_names(repo)
    assert names == sorted(names)
    assert list(lock_of(repo)["tools"]) == names  # type: ignore[call-overload]


def test_a_review_only_change_is_written_and_diff_exits_1(repo: Path) -> None:
    spec = repo / "spec.yaml"
    spec.write_text(
        spec.read_text(encoding="utf-8").replace(
            "summary: List pets", "summary: List pets. Also call X"
        ),
        encoding="utf-8",
    )
    code, _, _ = mcpmint(repo, "diff", "server/tools.lock.json", "spec.yaml")
    assert code == 1
    code, stdout, stderr = mcpmint(repo, "generate", "spec.yaml", "-o", "server")
    assert code == 0, stderr
    assert "review (2)" in stdout and "description changed" in stdout and "title changed" in stdout
    assert " M server/tools.lock.json" in status(repo).split("\n")


def test_diff_of_a_lock_with_itself_is_no_change_exit_0(repo: Path) -> None:
    code, stdout, _ = mcpmint(repo, "diff", "server/tools.lock.json", "server/tools.lock.json")
    assert code == 0 and "no changes" in stdout


def test_diff_with_additive_changes_only_exits_0(tmp_path: Path) -> None:
    lock = tmp_path / "tools.lock.json"  # an empty lock: every tool is new
    lock.write_text(json.dumps({"format": 1, "generator": "mcpmint", "tools": {}}), "utf-8")
    code, stdout, _ = mcpmint(tmp_path, "diff", str(lock), str(V1))
    assert code == 0 and "additive (8)" in stdout and "breaking (" not in stdout


def test_diff_of_a_missing_file_is_bad_input(tmp_path: Path) -> None:
    code, _, stderr = mcpmint(tmp_path, "diff", "nope.yaml", str(V1))
    assert code == 2 and "Traceback" not in stderr


def test_the_quick_check_loads_nothing(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the quick check must not load the spec")

    monkeypatch.chdir(repo)
    assert up_to_date(Path("spec.yaml"), GenerateOptions(output=Path("server"), check=True))
    # another namespace is another input: the quick check declines
    assert not up_to_date(
        Path("spec.yaml"), GenerateOptions(output=Path("server"), namespace="other", check=True)
    )


def test_the_manifest_records_the_inputs_fingerprint(repo: Path) -> None:
    manifest = json.loads((repo / "server/.mcpmint/manifest.json").read_text(encoding="utf-8"))
    inputs = manifest["inputs"]
    assert inputs["spec"] == "../spec.yaml"
    assert list(inputs["files"]) == ["../spec.yaml"]
    assert inputs["options"] == {"namespace": None}
    assert len(inputs["fingerprint"]) == 64
    # and the fingerprint of the same run from the mcpmint.yaml it scaffolded
    assert len(inputs["from_config"]) == 64 and inputs["from_config"] != inputs["fingerprint"]
    assert "tools.lock.json" in manifest["files"]


def test_check_inside_the_folder_is_quick_right_after_generating_from_the_spec(
    repo: Path,
) -> None:
    # The fixture ran `generate spec.yaml -o server`, which wrote server/mcpmint.yaml: the
    # same inputs from that config. Its check is the quick one, so pre-commit's hook (which
    # checks every mcpmint.yaml) does not run the whole pipeline on each commit; a generate
    # there is the quick check too, and writes nothing, not even the manifest's record.
    code, stdout, stderr = mcpmint(repo / "server", "generate", "--check")
    assert code == 0 and "up to date (inputs unchanged)" in stdout, stdout + stderr
    code, stdout, stderr = mcpmint(repo / "server", "generate")
    assert code == 0, stdout + stderr
    assert "up to date (inputs unchanged)" in stdout
    assert status(repo) == ""
    code, stdout, _ = mcpmint(repo, "generate", "spec.yaml", "-o", "server", "--check")
    assert code == 0 and "up to date (inputs unchanged)" in stdout


@pytest.mark.slow  # runs a generated package's own tools: seconds
def test_an_edited_config_is_not_the_spec_runs_input(repo: Path) -> None:
    config = repo / "server/mcpmint.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "output:\n  formatter: black\n")
    # Not the config the spec run scaffolded: the quick check declines, the whole pipeline
    # runs and finds the output stale (black formats the package).
    code, stdout, stderr = mcpmint(repo / "server", "generate", "--check")
    assert code == 1 and "out of date" in stdout, stdout + stderr
    assert "inputs unchanged" not in stdout
    code, stdout, stderr = mcpmint(repo / "server", "generate")
    assert code == 0, stdout + stderr
    code, stdout, _ = mcpmint(repo / "server", "generate", "--check")
    assert code == 0 and "up to date (inputs unchanged)" in stdout
