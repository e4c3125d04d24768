"""Fast regeneration (issue #8): the stage cache and validation beside the other stages.

The cache may only ever save time: every run here is compared byte for byte with a cold run
of the same inputs in a fresh folder.
"""

from __future__ import annotations

import gc
import hashlib
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcpmint import compact, models, pipeline, validate
from mcpmint import format as format_stage
from mcpmint.cache import CACHE_DIR, KEEP, StageCache, cache_key
from mcpmint.cli import app
from mcpmint.config import load_config
from mcpmint.diagnostics import Aborted, Diagnostic, DiagnosticSink, Level
from mcpmint.pipeline import GenerateOptions, generate
from mcpmint.write import MANIFEST

from .support import REPO, mcpmint

PETSTORE = REPO / "specs" / "petstore-plus.yaml"
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
    assert not report.refused
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


def count_compactions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A one-item list counting the schema roots compacted."""
    calls = [0]
    original = compact._Compactor.intern  # every root, planned or only cut, is interned

    def counting(self: Any, root: Any) -> Any:
        calls[0] += 1
        return original(self, root)

    monkeypatch.setattr(compact._Compactor, "intern", counting)
    return calls


def count_formatting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A one-item list counting the formatter's runs (ruff started on a tree)."""
    calls = [0]
    original = format_stage._format

    def counting(*args: Any) -> Any:
        calls[0] += 1
        return original(*args)

    monkeypatch.setattr(format_stage, "_format", counting)
    return calls


def forbid_model_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> str:
        raise AssertionError("datamodel-code-generator ran although its input was unchanged")

    monkeypatch.setattr(models, "_generate", refuse)


def whole_runs_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """No run patches the previous one's files (patch.py): the pipeline's own reuse is
    what the test is about."""
    monkeypatch.setattr(pipeline, "patched", lambda *args: None)


def test_cold_warm_and_changed_then_reverted_runs_give_identical_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole_runs_only(monkeypatch)
    original = PETSTORE.read_text(encoding="utf-8")
    changed = original.replace("summary: Get a pet", "summary: One pet, by its id", 1)
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
    first = entries(out)
    assert [name.split("-")[0] for name in first] == ["models", "validate"]

    assert len(entries(out, "tools")) == 1

    # A summary is not structure: the models come from the cache, the other tools from the
    # tool memo (only the edited one is built, its two schemas compacted), validation runs
    # again. No Python file changed: the formatter's previous output is reused.
    forbid_model_generation(monkeypatch)
    formatted = count_formatting(monkeypatch)
    compactions = count_compactions(monkeypatch)
    spec.write_text(changed, encoding="utf-8")
    run(spec, out)
    assert tree_digest(out) == expected_changed
    assert compactions == [2]
    assert formatted == [0]
    after = entries(out)
    assert [n for n in after if n.startswith("models-")] == [first[0]]  # reused
    assert len(after) == 3 and set(first) < set(after)  # other bytes: another findings key

    # Undoing the change is all hits: the previous run's entries were kept.
    def refuse(*args: object) -> list[object]:
        raise AssertionError("validation ran although the files were validated before")

    monkeypatch.setattr(validate, "findings", refuse)
    spec.write_text(original, encoding="utf-8")
    run(spec, out)
    assert tree_digest(out) == expected_original
    assert entries(out) == after


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


def test_a_new_base_url_remakes_every_test_case_of_the_reused_tools(tmp_path: Path) -> None:
    """The base URL is no input of a tool's build (the tools are reused), but every test
    case's expected request holds it: the cases are keyed with the server's settings."""
    original = PETSTORE.read_text(encoding="utf-8")
    changed = original.replace("http://127.0.0.1:8765/v2", "http://127.0.0.1:9999/v3")
    assert changed != original
    expected = cold(changed, tmp_path / "cold")
    work = tmp_path / "work"
    work.mkdir()
    (work / "spec.yaml").write_text(original, encoding="utf-8")
    run(work / "spec.yaml", work / "out")
    (work / "spec.yaml").write_text(changed, encoding="utf-8")
    run(work / "spec.yaml", work / "out")
    assert tree_digest(work / "out") == expected
    cases = (work / "out" / "tests" / "generated_cases.json").read_text(encoding="utf-8")
    assert "127.0.0.1:9999/v3" in cases and "8765" not in cases


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


def test_a_structural_change_regenerates_the_models_and_matches_a_cold_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = PETSTORE.read_text(encoding="utf-8")
    # A new optional property changes the structure datamodel-code-generator sees.
    changed = original.replace(
        "        name: {type: string, minLength: 1, example: Rex}\n",
        "        name: {type: string, minLength: 1, example: Rex}\n"
        "        nickname: {type: string}\n",
        1,
    )
    assert changed != original
    expected = cold(changed, tmp_path / "cold")
    work = tmp_path / "work"
    work.mkdir()
    (work / "spec.yaml").write_text(original, encoding="utf-8")
    run(work / "spec.yaml", work / "out")
    before = entries(work / "out")
    cold_compactions = count_compactions(monkeypatch)
    run(tmp_path / "cold" / "spec.yaml", tmp_path / "again")  # a new folder: an empty memo
    cold_count = cold_compactions[0]
    compactions = count_compactions(monkeypatch)
    formatted = count_formatting(monkeypatch)
    (work / "spec.yaml").write_text(changed, encoding="utf-8")
    run(work / "spec.yaml", work / "out")
    assert tree_digest(work / "out") == expected
    assert formatted == [1]  # models.py changed: formatted again (and only once)
    # Only the roots whose schemas changed were compacted again.
    assert 0 < compactions[0] < cold_count
    models_entries = [n for n in entries(work / "out") if n.startswith("models-")]
    assert len(models_entries) == 2 and before[0] in models_entries  # a new one, the old kept


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
    # The inputs did not change, so a plain run would be the quick check: run the pipeline.
    sink = DiagnosticSink()
    generate(work / "spec.yaml", GenerateOptions(output=out), sink, quick_checked=True)
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
    assert not report.quick and not (out / CACHE_DIR).exists()


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


def test_validation_in_a_second_process_reports_the_same_warnings_in_the_same_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tmp_path / "many.json"
    spec.write_text(many_operations_spec(60), encoding="utf-8")
    monkeypatch.setattr(validate, "BACKGROUND_MIN_PATHS", 10**9)
    inline = run(spec, tmp_path / "inline")
    started: list[bool] = []
    original_start = validate.PendingFindings.start

    def spy(self: validate.PendingFindings) -> bool:
        started.append(original_start(self))
        return started[-1]

    monkeypatch.setattr(validate, "BACKGROUND_MIN_PATHS", 50)
    monkeypatch.setattr(validate.PendingFindings, "start", spy)
    background = run(spec, tmp_path / "background")
    assert started == [threading.active_count() == 1]  # forked unless threads make it unsafe
    assert [d.render() for d in background] == [d.render() for d in inline]
    assert any("validation:" in d.message for d in inline)
    assert tree_digest(tmp_path / "background") == tree_digest(tmp_path / "inline")


def test_the_files_are_written_while_validation_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Validation findings are warnings only, so the writes do not wait for them: a
    validation that ends only once the files are in place (or after 5 s) still reports its
    findings where they belong, and says the files were there."""
    spec, out = tmp_path / "many.json", tmp_path / "out"
    spec.write_text(many_operations_spec(60), encoding="utf-8")
    original = validate.findings

    def after_the_writes(*args: Any) -> Any:
        waited = 0.0
        while not (out / MANIFEST).exists() and waited < 5:
            time.sleep(0.05)
            waited += 0.05
        found, shape = original(*args)
        seen = "written" if (out / MANIFEST).exists() else "not written"
        return [*found, Diagnostic(Level.WARNING, "#", f"files {seen}", "")], shape

    monkeypatch.setattr(validate, "BACKGROUND_MIN_PATHS", 50)  # in the second process
    monkeypatch.setattr(validate, "findings", after_the_writes)
    sink = run(spec, out)
    messages = [d.message for d in sink]
    assert "files written" in messages
    # In their place: the validator's own findings just before the note, as joined early.
    assert any("validation:" in m for m in messages[: messages.index("files written")])


def _describe_more(operation: dict[str, Any]) -> None:
    operation["description"] += " Changed for the regeneration test."


def _add_parameter(operation: dict[str, Any]) -> None:
    parameter = {"name": "mcpmint_test", "in": "query", "schema": {"type": "string"}}
    operation["parameters"] = [*operation.get("parameters", []), parameter]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit", "patch"),
    [(_describe_more, True), (_add_parameter, True), (_add_parameter, False)],
    ids=["description", "parameter", "parameter, the pipeline"],
)
def test_github_one_changed_operation_regenerates_to_the_bytes_of_a_cold_run(
    tmp_path: Path, edit: Any, patch: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = GITHUB.read_text(encoding="utf-8")
    changed_document = json.loads(original)
    edit(changed_document["paths"]["/repos/{owner}/{repo}/issues"]["get"])
    changed = json.dumps(changed_document, indent=2)
    work = tmp_path / "work"
    work.mkdir()
    (work / "github.json").write_text(original, encoding="utf-8")
    run(work / "github.json", work / "out")
    made: list[int] = []
    original_generate = models._generate

    def counting(text: str, location: str) -> Any:
        made.append(1)
        return original_generate(text, location)

    monkeypatch.setattr(models, "_generate", counting)
    if not patch:
        whole_runs_only(monkeypatch)
    (work / "github.json").write_text(changed, encoding="utf-8")
    sink = DiagnosticSink()
    report = generate(work / "github.json", GenerateOptions(output=work / "out"), sink)
    assert not sink.has_errors
    # The previous run's files are patched (patch.py): a description is no structure, and a
    # new parameter's arguments class is one alone, written again in place. The pipeline,
    # run instead, writes that plain class itself: no model group is made again (a
    # structural edit to a tool that datamodel-code-generator models makes its group again:
    # test_model_groups.py).
    assert (report.patched is not None) == patch
    assert made == []
    # Validation ran again (the old entry is kept).
    stages = [n.split("-")[0] for n in entries(work / "out")]
    assert stages[-2:] == ["validate", "validate"]
    monkeypatch.undo()
    assert tree_digest(work / "out") == cold(changed, tmp_path / "cold", "github.json")


def test_the_collector_runs_rarely_during_a_run_and_as_before_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = gc.get_threshold()
    seen: list[tuple[int, ...]] = []
    original = pipeline._generate

    def spying(*args: Any) -> Any:
        seen.append(gc.get_threshold())
        return original(*args)

    monkeypatch.setattr(pipeline, "_generate", spying)
    run(PETSTORE, tmp_path / "out")
    assert seen[0][0] > before[0] and gc.get_threshold() == before
    broken = tmp_path / "broken.yaml"
    broken.write_text("openapi: 3.1.0\npaths: [\n", encoding="utf-8")
    with pytest.raises(Aborted):
        generate(broken, GenerateOptions(output=tmp_path / "other"), DiagnosticSink())
    assert gc.get_threshold() == before


def _generated_then_edited(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """petstore-plus as JSON, generated into `tmp_path/out`, then one description edited
    (a change a patch makes): the spec and its data."""
    spec = tmp_path / "spec.json"
    data = yaml.safe_load(PETSTORE.read_text(encoding="utf-8"))
    spec.write_text(json.dumps(data), encoding="utf-8")
    run(spec, tmp_path / "out")
    data["paths"]["/pets"]["get"]["description"] = "Edited."
    spec.write_text(json.dumps(data), encoding="utf-8")
    return spec, data


def test_a_patched_run_pauses_the_collector_and_leaves_it_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, _ = _generated_then_edited(tmp_path)
    seen: list[Any] = []
    original = pipeline.patched

    def spying(*args: Any) -> Any:
        seen.append(gc.isenabled())
        return original(*args)

    monkeypatch.setattr(pipeline, "patched", spying)
    frozen = gc.get_freeze_count()  # (a generated server's catalogue, imported by a test)
    report = generate(spec, GenerateOptions(output=tmp_path / "out"), DiagnosticSink())
    assert report.patched is not None
    assert seen == [False]  # off for the patch
    assert gc.isenabled()  # and on again after it
    assert gc.get_freeze_count() == frozen  # nothing left out of later collections here, but:


def test_a_patched_run_whose_process_ends_with_it_freezes_what_it_made(tmp_path: Path) -> None:
    # `held`: the caller (the command line) ends its process with the run, so what the patch
    # made is left out of the collections to come, which would scan it all for nothing.
    spec, data = _generated_then_edited(tmp_path)
    held: list[Any] = []
    frozen = gc.get_freeze_count()  # (a generated server's catalogue, imported by a test)
    try:
        report = generate(
            spec, GenerateOptions(output=tmp_path / "out"), DiagnosticSink(), held=held
        )
        assert report.patched is not None
        assert gc.get_freeze_count() > frozen and gc.isenabled()
    finally:
        gc.unfreeze()
    data["info"]["title"] = "Renamed"  # outside the path items: the whole pipeline runs
    spec.write_text(json.dumps(data), encoding="utf-8")
    try:  # and its collections are as they were
        report = generate(
            spec, GenerateOptions(output=tmp_path / "out"), DiagnosticSink(), held=held
        )
        assert report.patched is None and gc.get_freeze_count() == 0  # unfrozen above
    finally:
        gc.unfreeze()


def test_the_command_imports_the_strict_checker_only_when_findings_are_made() -> None:
    # openapi-spec-validator takes a tenth of a second to import: a run whose findings are
    # cached, or made in the second process, never needs it (nor the model generator).
    probe = (
        "import sys, mcpmint.cli\n"
        "print([m for m in ('openapi_spec_validator', 'datamodel_code_generator') "
        "if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# jsonschema too: the quick check reads the config unchecked (it trusts only checked bytes).
_STAGES = (
    "mcpmint.pipeline",
    "mcpmint.render",
    "mcpmint.frontends.openapi",
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


def test_an_unchanged_lock_is_not_read_back_and_a_changed_one_is_compared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The previous lock is parsed and compared only when its text differs from the new one:
    an unchanged lock has no change to find (15 MB of JSON on GitHub). (A patched run has its
    changed tools' summaries: test_patch.py.)"""
    whole_runs_only(monkeypatch)
    spec = tmp_path / "spec.yaml"
    shutil.copy(REPO / "specs" / "petstore.yaml", spec)
    out = tmp_path / "out"
    run(spec, out)
    parsed: list[int] = []
    original = pipeline.changes_since

    def counting(text: str, *args: Any) -> Any:
        parsed.append(len(text))
        return original(text, *args)

    monkeypatch.setattr(pipeline, "changes_since", counting)
    run(spec, out)  # nothing changed
    assert parsed == []
    spec.write_text(spec.read_text(encoding="utf-8").replace("List all pets", "List pets"))
    report = generate(spec, GenerateOptions(output=out), DiagnosticSink())
    assert len(parsed) == 1  # the changed lock was read back and compared
    changed = [change.what for change in report.lock_changes]
    assert changed == ["description changed", "title changed"]


def test_tools_and_validate_reuse_a_generated_projects_cache_read_only_and_say_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
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

    # In this process: every tool comes from the memo (nothing compacted), no validation.
    def refuse(*args: object) -> list[object]:
        raise AssertionError("validation ran although the project's cache holds its findings")

    config = load_config(project / "mcpmint.yaml", DiagnosticSink())
    assert config is not None
    compactions = count_compactions(monkeypatch)
    monkeypatch.setattr(validate, "findings", refuse)
    sink = DiagnosticSink()
    assert len(pipeline.build_quickly(config, sink).tools) == 8
    assert compactions == [0]
    monkeypatch.undo()

    shutil.rmtree(cache)
    cold_runs = [mcpmint(*command, "mcpmint.yaml", cwd=project) for command in commands]
    assert warm == cold_runs
    assert warm[0][0] == 0 and json.loads(warm[0][1])["summary"]["tools"] == 8
    assert not cache.exists()  # a cold report writes no cache either


def test_diff_builds_the_new_spec_with_the_tools_the_old_ones_build_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    original = PETSTORE.read_text(encoding="utf-8")
    (tmp_path / "old.yaml").write_text(original, encoding="utf-8")
    changed = original.replace("summary: Get a pet", "summary: One pet, by its id", 1)
    (tmp_path / "new.yaml").write_text(changed, encoding="utf-8")
    compactions = count_compactions(monkeypatch)
    pipeline.build(tmp_path / "old.yaml", DiagnosticSink())
    cold = compactions[0]
    compactions[0] = 0
    with pytest.raises(SystemExit) as exit:
        app(["diff", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml")])
    assert exit.value.code == 1  # a review change
    assert "description changed" in capsys.readouterr().out
    # The old spec built cold, the new one reused every tool but the edited one (two roots).
    assert compactions == [cold + 2]


def test_a_plain_generate_of_an_unchanged_output_is_quick_and_still_scaffolds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mcpmint generate` of a project (or of a spec, with `-o`) that nothing changed writes
    nothing, so it is the quick check (a no-op regeneration of GitHub: ~0.25 s instead of
    ~1.8 s); but a missing user-owned file is one a run writes, so then the pipeline runs and
    writes it back."""
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
    loads: list[int] = []
    real = pipeline.load_document
    monkeypatch.setattr(pipeline, "load_document", lambda *a, **k: loads.append(1) or real(*a, **k))
    out = tmp_path / "out"
    run(PETSTORE, out)
    expected = tree_digest(out)
    run(PETSTORE, out)
    assert loads == [1]
    (out / "mcpmint.yaml").unlink()
    run(PETSTORE, out)
    assert loads == [1, 1] and tree_digest(out) == expected
    config = out / "mcpmint.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "# ours now\n", encoding="utf-8")
    warned = run(PETSTORE, out)
    assert loads == [1, 1, 1]
    assert any("a run from a spec ignores" in d.message for d in warned.warnings)
    run(PETSTORE, out)  # and again: the edited config still makes the run warn
    assert loads == [1, 1, 1, 1]
