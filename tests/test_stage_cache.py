"""Regeneration: the stage cache and the tool memo may only ever save time.

Every run here is compared byte for byte with a cold run of the same inputs in a fresh folder:
after each kind of spec edit, after config edits, with a damaged cache, with validation in a
forked child or not. Nothing here spies on the pipeline's internals: what is observed is the
output, the diagnostics, the processes left behind and the imports of the command line.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcpmint.config import load_config
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.load import validate
from mcpmint.pipeline import GenerateOptions, generate
from mcpmint.render import cases, models
from mcpmint.write.cache import CACHE_DIR, KEEP, StageCache, cache_key

from .support import REPO, mcpmint

SPECS = REPO / "specs"
PETSTORE = SPECS / "petstore-plus.yaml"
GITHUB = REPO.parent / "shared" / "corpus" / "github.json"


def tree_digest(folder: Path) -> dict[str, str]:
    """Every file of a generated tree except the cache itself."""
    cache = folder / CACHE_DIR
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and cache not in p.parents
    }


def run(spec: Path, out: Path, **options: Any) -> DiagnosticSink:
    sink = DiagnosticSink()
    report = generate(spec, GenerateOptions(output=out, **options), sink)
    assert not sink.has_errors, [d.render() for d in sink.errors]
    assert not report.refused and not report.blocked
    return sink


def cold(spec_text: str, folder: Path, name: str = "spec.yaml") -> dict[str, str]:
    """A cold run in a fresh folder: `folder/<name>` -> `folder/out`."""
    folder.mkdir(parents=True)
    (folder / name).write_text(spec_text, encoding="utf-8")
    run(folder / name, folder / "out")
    return tree_digest(folder / "out")


def entries(out: Path, *stages: str) -> list[str]:
    """The cache's entry files, of the given stages (default: models and validate)."""
    stages = stages or ("models", "validate")
    found = (p.name for p in (out / CACHE_DIR).glob("*.json"))
    return sorted(name for name in found if name.split("-")[0] in stages)


def _summary(text: str) -> str:
    return text.replace("summary: Get a pet", "summary: One pet, by its id", 1)


def _new_property(text: str) -> str:
    return text.replace(
        "        name: {type: string, minLength: 1, example: Rex}\n",
        "        name: {type: string, minLength: 1, example: Rex}\n"
        "        nickname: {type: string}\n",
        1,
    )


def _base_url(text: str) -> str:
    return text.replace("http://127.0.0.1:8765/v2", "http://127.0.0.1:9999/v3")


def _no_delete(text: str) -> str:
    """The spec without its first DELETE operation (a removed tool)."""
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.strip() == "delete:")
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while end < len(lines) and (
        not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent
    ):
        end += 1
    return "".join(lines[:start] + lines[end:])


SPEC_EDITS: dict[str, Callable[[str], str]] = {
    "a summary": _summary,
    "a new property": _new_property,
    "the base URL": _base_url,
    "a removed operation": _no_delete,
}


@pytest.mark.parametrize("edit", SPEC_EDITS)
def test_a_spec_edit_and_its_undoing_give_the_bytes_of_cold_runs(tmp_path: Path, edit: str) -> None:
    original = PETSTORE.read_text(encoding="utf-8")
    changed = SPEC_EDITS[edit](original)
    assert changed != original
    expected_original = cold(original, tmp_path / "cold-original")
    expected_changed = cold(changed, tmp_path / "cold-changed")
    assert expected_changed != expected_original
    work = tmp_path / "work"
    work.mkdir()
    spec, out = work / "spec.yaml", work / "out"
    spec.write_text(original, encoding="utf-8")
    run(spec, out)
    assert tree_digest(out) == expected_original
    spec.write_text(changed, encoding="utf-8")
    run(spec, out, accept_breaking=True)
    assert tree_digest(out) == expected_changed
    spec.write_text(original, encoding="utf-8")
    run(spec, out, accept_breaking=True)
    assert tree_digest(out) == expected_original
    # The cache keeps what the runs made: the models and the findings of both versions.
    assert [name.split("-")[0] for name in entries(out, "validate")] == ["validate"] * 2


GOLDEN_SPECS = {
    "petstore": SPECS / "petstore.yaml",
    "petstore-v2": SPECS / "petstore-v2.yaml",
    "wire-plan-3.1": SPECS / "wire-plan-3.1" / "oas31.yaml",
    "internal-tools": SPECS / "internal-tools.yaml",
    "mixed": SPECS / "mixed" / "mcpmint.yaml",
}


@pytest.mark.parametrize("name", GOLDEN_SPECS)
def test_a_run_from_the_cache_gives_the_cold_runs_bytes_for_every_golden_spec(
    tmp_path: Path, name: str
) -> None:
    """The pipeline run again over its own output (every stage cache and tool memo hit)
    writes nothing and leaves the cold run's bytes, for OpenAPI 3.0, 3.1, Swagger 2.0, a
    manifest and a multi-source config."""
    spec = GOLDEN_SPECS[name]
    folder = tmp_path / "project"
    shutil.copytree(spec.parent, folder)
    source: Any = folder / spec.name
    if spec.name == "mcpmint.yaml":
        shutil.copy(SPECS / "petstore.yaml", tmp_path / "petstore.yaml")  # its other source
        source = load_config(folder / spec.name, DiagnosticSink())
    out = tmp_path / "out"
    sink = DiagnosticSink()
    generate(source, GenerateOptions(output=out), sink)
    assert not sink.has_errors, [d.render() for d in sink.errors]
    cold_bytes = tree_digest(out)
    if name != "internal-tools":  # a manifest is neither validated nor built from a memo
        stages = {name.split("-")[0] for name in entries(out, "tools", "cases", "validate")}
        assert stages == {"tools", "cases", "validate"}  # the cache was filled
    again = DiagnosticSink()
    report = generate(source, GenerateOptions(output=out), again)
    assert not report.written and not report.removed
    assert tree_digest(out) == cold_bytes
    assert [d.render() for d in again] == [d.render() for d in sink]


def _config_run(folder: Path, config_text: str) -> dict[str, str]:
    """`mcpmint generate` of a project config in `folder` (its spec beside it)."""
    (folder / "mcpmint.yaml").write_text(config_text, encoding="utf-8")
    sink = DiagnosticSink()
    config = load_config(folder / "mcpmint.yaml", sink)
    assert config is not None, [d.render() for d in sink]
    report = generate(config, GenerateOptions(output=None), sink)
    assert not sink.has_errors and not report.refused, [d.render() for d in sink]
    return tree_digest(folder)


CONFIG = "sources:\n  - spec: spec.yaml\n"
CONFIG_EDITS = {
    # The server's settings: every tool's test case reads them.
    "a setting": CONFIG + "settings:\n  BASE_URL: http://other.test/v2\n",
    # An override replaces one tool after the build: what is made from it is made again.
    "an override": CONFIG + "    overrides:\n      getPet: {description: Finds one pet.}\n",
    "a tool mode": CONFIG + "tools: {mode: dynamic}\n",
}


@pytest.mark.parametrize("edit", CONFIG_EDITS)
def test_a_config_change_after_a_run_gives_the_bytes_of_a_cold_run(
    tmp_path: Path, edit: str
) -> None:
    """The tool memo also keeps what later stages make from each tool (its test case, the
    digests of its definition): a change to what they read besides the tool remakes them."""
    spec_text = PETSTORE.read_text(encoding="utf-8")
    cold_folder = tmp_path / "cold"
    cold_folder.mkdir()
    (cold_folder / "spec.yaml").write_text(spec_text, encoding="utf-8")
    expected = _config_run(cold_folder, CONFIG_EDITS[edit])
    warm = tmp_path / "warm"
    warm.mkdir()
    (warm / "spec.yaml").write_text(spec_text, encoding="utf-8")
    _config_run(warm, CONFIG)
    assert _config_run(warm, CONFIG_EDITS[edit]) == expected


@pytest.mark.parametrize("damage", ["garbage", "empty", "wrong key", "deleted folder"])
def test_a_corrupt_or_deleted_cache_falls_back_to_a_cold_run(tmp_path: Path, damage: str) -> None:
    expected = cold(PETSTORE.read_text(encoding="utf-8"), tmp_path / "cold")
    work = tmp_path / "cold"
    out = work / "out"
    names = entries(out)
    for name in names:
        entry = out / CACHE_DIR / name
        if damage == "garbage":
            entry.write_bytes(b"\x00\xff{not json")
        elif damage == "empty":
            entry.write_text("", encoding="utf-8")
        elif damage == "wrong key":
            entry.write_text(json.dumps({"key": "0" * 64, "value": "x"}), encoding="utf-8")
    if damage == "deleted folder":
        shutil.rmtree(out / CACHE_DIR)
    # The inputs did not change: the command line would answer from its quick check, the
    # pipeline runs whole.
    sink = DiagnosticSink()
    generate(work / "spec.yaml", GenerateOptions(output=out), sink)
    assert not sink.has_errors
    assert tree_digest(out) == expected
    assert entries(out) == names  # rewritten, whole again
    for name in names:
        entry = json.loads((out / CACHE_DIR / name).read_text(encoding="utf-8"))
        assert entry["key"] in name


def test_a_cached_model_module_with_code_in_it_is_not_trusted(tmp_path: Path) -> None:
    expected = cold(PETSTORE.read_text(encoding="utf-8"), tmp_path / "cold")
    out = tmp_path / "cold" / "out"
    (name,) = [n for n in entries(out) if n.startswith("models-")]
    entry = json.loads((out / CACHE_DIR / name).read_text(encoding="utf-8"))
    entry["value"] += "\nimport os\nos.system('echo owned')\n"
    (out / CACHE_DIR / name).write_text(json.dumps(entry), encoding="utf-8")
    run(tmp_path / "cold" / "spec.yaml", out)
    assert tree_digest(out) == expected
    models_py = next(out.rglob("_generated/models.py")).read_text(encoding="utf-8")
    assert "os.system" not in models_py


def test_the_cache_is_not_a_generated_file_and_check_does_not_touch_it(tmp_path: Path) -> None:
    cold(PETSTORE.read_text(encoding="utf-8"), tmp_path / "cold")
    out = tmp_path / "cold" / "out"
    manifest = json.loads((out / ".mcpmint" / "manifest.json").read_text(encoding="utf-8"))
    assert not [path for path in manifest["files"] if path.startswith(CACHE_DIR)]
    assert (out / CACHE_DIR / ".gitignore").read_text(encoding="utf-8").endswith("*\n")
    shutil.rmtree(out / CACHE_DIR)
    sink = DiagnosticSink()
    report = generate(
        tmp_path / "cold" / "spec.yaml", GenerateOptions(output=out, check=True), sink
    )
    assert not report.changed and not sink.has_errors
    assert not (out / CACHE_DIR).exists()  # --check writes nothing, not even the cache
    # The full (not quick) check too, as after a change of the generator.
    (out / ".mcpmint" / "manifest.json").write_text(
        json.dumps({**manifest, "inputs": {}}, indent=2), encoding="utf-8"
    )
    report = generate(
        tmp_path / "cold" / "spec.yaml", GenerateOptions(output=out, check=True), sink
    )
    assert not (out / CACHE_DIR).exists()


def test_G8_the_cache_is_never_written_through_a_symbolic_link(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out" / ".mcpmint").mkdir(parents=True)
    (tmp_path / "out" / CACHE_DIR).symlink_to(elsewhere, target_is_directory=True)
    cache = StageCache(tmp_path / "out" / CACHE_DIR)
    cache.put("models", cache_key("models", "x"), "text")
    cache.save()
    assert list(elsewhere.iterdir()) == []


def test_cache_keys_change_with_the_stage_and_the_inputs_and_unknown_entries_miss(
    tmp_path: Path,
) -> None:
    key = cache_key("models", "abc", "pydantic")
    assert key == cache_key("models", "abc", "pydantic")
    assert key != cache_key("validate", "abc", "pydantic")
    assert key != cache_key("models", "abd", "pydantic")
    assert key != cache_key("models", "abc")
    cache = StageCache(tmp_path / "c")
    assert cache.get("models", key) is None
    cache.put("models", key, {"a": [1, "é"]})
    cache.save()
    again = StageCache(tmp_path / "c")
    assert again.get("models", key) == {"a": [1, "é"]}
    assert again.get("models", cache_key("models", "other")) is None
    again.save()
    assert len(list((tmp_path / "c").glob("*.json"))) == 1
    # Unused entries are kept, the KEEP most recently used per stage, besides this run's.
    for number in range(KEEP + 3):
        run_cache = StageCache(tmp_path / "c")
        run_cache.put("models", cache_key("models", number), number)
        run_cache.put("validate", cache_key("validate", number), number)
        run_cache.save()
    kept = sorted(p.name.split("-")[0] for p in (tmp_path / "c").glob("*.json"))
    assert kept == ["models"] * (KEEP + 1) + ["validate"] * (KEEP + 1)
    latest = StageCache(tmp_path / "c")
    assert latest.get("models", cache_key("models", KEEP + 2)) == KEEP + 2
    assert latest.get("models", cache_key("models", 0)) is None  # the oldest went first
    StageCache(None).put("models", key, 1)  # no folder: a cache that never hits or writes


def many_operations_spec(count: int) -> str:
    """A synthetic spec with `count` paths, one of them with a validation finding."""
    paths = {}
    for number in range(count):
        paths[f"/things{number}/{{id}}"] = {
            "get": {
                "operationId": f"getThing{number}",
                "summary": f"Get thing {number}",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}
                        },
                    }
                },
            }
        }
    # A strict-schema violation: an unknown field where the schema allows none.
    paths["/things0/{id}"]["get"]["responses"]["200"]["x_oops"] = 1
    document = {
        "openapi": "3.0.3",
        "info": {"title": "Many things", "version": "1.0.0"},
        "servers": [{"url": "https://api.example.test"}],
        "paths": paths,
        "components": {
            "schemas": {
                "Thing": {
                    "type": "object",
                    "properties": {"id": {"type": "string"}, "size": {"type": "integer"}},
                }
            }
        },
    }
    return json.dumps(document, indent=1)


def test_validation_in_a_forked_child_reports_the_same_warnings_in_the_same_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tmp_path / "many.json"
    spec.write_text(many_operations_spec(60), encoding="utf-8")
    monkeypatch.setattr(validate, "FORK_MIN_PATHS", 10**9)
    inline = run(spec, tmp_path / "inline")
    monkeypatch.setattr(validate, "FORK_MIN_PATHS", 50)
    forked = run(spec, tmp_path / "forked")
    assert [d.render() for d in forked] == [d.render() for d in inline]
    assert any("validation:" in d.message for d in inline)
    assert tree_digest(tmp_path / "forked") == tree_digest(tmp_path / "inline")


@pytest.mark.parametrize("stage", [models, cases], ids=["models", "cases"])
def test_a_stage_made_in_a_forked_child_makes_what_it_makes_in_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stage: Any
) -> None:
    """The typed models and the test cases of a large server are each made in a forked
    child: the same bytes, the same diagnostics, and the same cache entries handed back for
    the next run."""
    spec = tmp_path / "many.json"
    spec.write_text(many_operations_spec(60), encoding="utf-8")
    monkeypatch.setattr(stage, "FORK_MIN_TOOLS", 10**9)
    inline = run(spec, tmp_path / "inline")
    monkeypatch.setattr(stage, "FORK_MIN_TOOLS", 10)
    forked = run(spec, tmp_path / "forked")
    assert [d.render() for d in forked] == [d.render() for d in inline]
    assert tree_digest(tmp_path / "forked") == tree_digest(tmp_path / "inline")
    stages = ("models", "cases", "validate", "format")
    assert entries(tmp_path / "forked", *stages) == entries(tmp_path / "inline", *stages)
    assert entries(tmp_path / "forked", "cases")  # the cases memo came back from the child


@pytest.mark.parametrize("fork_min_tools", [10, 10**9], ids=["forked", "inline"])
def test_a_run_whose_render_fails_drops_the_models_and_cases_it_began(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fork_min_tools: int
) -> None:
    """The typed models and the test cases are begun before the templates are rendered; when
    rendering fails, the run ends with its error at once: a child making them is stopped, and
    what was to be made in line is never made."""
    from mcpmint import pipeline

    spec = tmp_path / "many.json"
    spec.write_text(many_operations_spec(60), encoding="utf-8")
    made = tmp_path / "made"
    build_cases = cases.build_cases

    def slow_cases(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.5)  # still at work when the render fails
        made.write_text("the cases were made", encoding="utf-8")
        return build_cases(*args, **kwargs)

    def failing_render(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the render failed")

    monkeypatch.setattr(cases, "FORK_MIN_TOOLS", fork_min_tools)
    monkeypatch.setattr(models, "FORK_MIN_TOOLS", fork_min_tools)
    monkeypatch.setattr(cases, "build_cases", slow_cases)
    monkeypatch.setattr(pipeline, "render", failing_render)
    with pytest.raises(RuntimeError, match="the render failed"):
        generate(spec, GenerateOptions(output=tmp_path / "out"), DiagnosticSink())
    assert not _children(os.getpid()), "a child outlived the run"
    assert not made.exists()


def _children(pid: int) -> set[int]:
    """The live child processes of `pid` (Linux /proc)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.update(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue
    return {child for child in found if _alive(child)}


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in status  # a zombie has ended; only its exit status is left


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
@pytest.mark.parametrize("children_wanted", [1, 3], ids=["validating", "rendering"])
def test_a_run_killed_mid_way_leaves_no_process_behind(
    tmp_path: Path, signal_number: int, children_wanted: int
) -> None:
    """On a large spec, validation runs in a forked child, and once the tools are built the
    typed models and the test cases in two more: whatever ends the run, Ctrl-C, SIGTERM or
    SIGKILL of the parent, while the first child or all three are at work, they end with
    it."""
    spec = tmp_path / "many.json"
    spec.write_text(many_operations_spec(validate.FORK_MIN_PATHS * 10), encoding="utf-8")
    run_ = subprocess.Popen(
        [sys.executable, "-m", "mcpmint", "generate", str(spec), "-o", str(tmp_path / "out")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    children: set[int] = set()
    while len(children) < children_wanted and run_.poll() is None:
        assert time.monotonic() < deadline
        children |= _children(run_.pid)
        time.sleep(0.005)
    assert len(children) >= children_wanted, "the run ended before it forked them all"
    os.kill(run_.pid, signal_number)
    run_.wait(timeout=30)
    # Well before a child could have finished its work on 2,000 path items on its own.
    deadline = time.monotonic() + 1
    while any(_alive(child) for child in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [child for child in children if _alive(child)]


def _describe_more(operation: dict[str, Any]) -> None:
    operation["description"] += " Changed for the regeneration test."


def _add_parameter(operation: dict[str, Any]) -> None:
    parameter = {"name": "mcpmint_test", "in": "query", "schema": {"type": "string"}}
    operation["parameters"] = [*operation.get("parameters", []), parameter]


@pytest.mark.slow
@pytest.mark.parametrize("edit", [_describe_more, _add_parameter], ids=["description", "parameter"])
def test_github_one_changed_operation_regenerates_to_the_bytes_of_a_cold_run(
    tmp_path: Path, edit: Any
) -> None:
    original = GITHUB.read_text(encoding="utf-8")
    changed_document = json.loads(original)
    edit(changed_document["paths"]["/repos/{owner}/{repo}/issues"]["get"])
    changed = json.dumps(changed_document, indent=2)
    work = tmp_path / "work"
    work.mkdir()
    (work / "github.json").write_text(original, encoding="utf-8")
    run(work / "github.json", work / "out")
    (work / "github.json").write_text(changed, encoding="utf-8")
    run(work / "github.json", work / "out")
    assert tree_digest(work / "out") == cold(changed, tmp_path / "cold", "github.json")


# jsonschema too: the quick check reads the config unchecked (it trusts only checked bytes).
_STAGES = (
    "mcpmint.pipeline",
    "mcpmint.render.templates",
    "mcpmint.build.frontends.openapi",
    "jinja2",
    "jsonschema",
)


def generate_in_a_new_process(folder: Path, *flags: str) -> list[str]:
    """`mcpmint generate [flags]` in `folder`, in a new interpreter: its output lines, then
    `exit <code>`, then which of `_STAGES` it imported."""
    probe = (
        "import sys\n"
        "from mcpmint.cli import app\n"
        "try:\n"
        f"    app(['generate', *{list(flags)!r}])\n"
        "except SystemExit as exit:\n"
        "    print('exit', exit.code)\n"
        f"print([m for m in {_STAGES!r} if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=folder, capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


def test_the_quick_check_of_an_up_to_date_project_imports_none_of_the_stages(
    tmp_path: Path,
) -> None:
    """Every commit's pre-commit hook asks `generate --check`: answered from the hashes, it
    needs none of the pipeline's stages (their imports were two thirds of its time)."""
    out = tmp_path / "out"
    run(PETSTORE, out)
    lines = generate_in_a_new_process(out, "--check")
    assert lines == [". : up to date (inputs unchanged)".replace(" :", ":"), "exit 0", "[]"]
    # A stale project runs the pipeline: the probe sees its stages imported.
    (out / "REFERENCE.md").write_text("edited\n", encoding="utf-8")
    assert generate_in_a_new_process(out, "--check")[-2:] == ["exit 1", repr(list(_STAGES))]


def test_tools_and_validate_reuse_a_generated_projects_cache_read_only_and_say_the_same(
    tmp_path: Path,
) -> None:
    """`mcpmint tools` and `validate` of a project config read the stage cache its last
    `generate` left (the built tools, the validation findings) and write nothing to it; their
    output is a cold build's, byte for byte."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "spec.yaml").write_text(PETSTORE.read_text(encoding="utf-8"), encoding="utf-8")
    _config_run(project, CONFIG)
    cache = project / CACHE_DIR
    stored = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in cache.iterdir()}
    commands = (["tools", "--json"], ["tools"], ["validate"])
    warm = [mcpmint(*command, "mcpmint.yaml", cwd=project) for command in commands]
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in cache.iterdir()} == stored

    shutil.rmtree(cache)
    cold_runs = [mcpmint(*command, "mcpmint.yaml", cwd=project) for command in commands]
    assert warm == cold_runs
    assert warm[0][0] == 0 and json.loads(warm[0][1])["summary"]["tools"] == 8
    assert not cache.exists()  # a cold report writes no cache either


def test_a_plain_generate_of_an_unchanged_output_is_quick_and_still_scaffolds(
    tmp_path: Path,
) -> None:
    """`mcpmint generate` of a project (or of a spec, with `-o`) that nothing changed writes
    nothing, so it is the quick check; but a missing user-owned file is one a run writes, so
    then the pipeline runs and writes it back."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "spec.yaml").write_text(PETSTORE.read_text(encoding="utf-8"), encoding="utf-8")
    _config_run(project, CONFIG)
    before = tree_digest(project)
    lines = generate_in_a_new_process(project)
    assert lines == [".: up to date (inputs unchanged)", "exit 0", "[]"]
    (project / "README.md").unlink()
    lines = generate_in_a_new_process(project)
    assert lines[-3].startswith(".: 0 written, 1 scaffolded, 0 removed"), lines
    assert lines[-1] == repr(list(_STAGES))
    assert tree_digest(project) == before
    # A run from a spec too; but the project config it scaffolded must be there, unedited:
    # a missing one it writes back, an edited one it warns about (a run from the spec ignores
    # it), and both need the pipeline.
    out = tmp_path / "out"
    flags = [str(PETSTORE), "-o", str(out)]
    run(PETSTORE, out)
    expected = tree_digest(out)
    assert generate_in_a_new_process(tmp_path, *flags)[0].endswith("up to date (inputs unchanged)")
    (out / "mcpmint.yaml").unlink()
    lines = generate_in_a_new_process(tmp_path, *flags)
    assert "0 written, 1 scaffolded" in lines[-3] and tree_digest(out) == expected
    config = out / "mcpmint.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "# ours now\n", encoding="utf-8")
    for _ in range(2):  # never quick: each run warns that the spec run ignores the config
        lines = generate_in_a_new_process(tmp_path, *flags)
        assert lines[-1] == repr(list(_STAGES))
