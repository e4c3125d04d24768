"""Large APIs (issue #8, largeapi.py): above ~100,000 estimated tokens in all mode, generate
warns and offers dynamic mode, and typed result models are kept to handler tools.

Argument models are always generated. A handler returns its result model, so handler tools
always get one; an HTTP tool's result is the upstream's JSON, which no generated code parses,
and on a large API those models are megabytes of code (GitHub's: 1.7 MB, 15 s).
`output.result_models` decides: auto, all or handlers.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcpmint.build.largeapi import LARGE_TOKENS, result_models_for
from mcpmint.config import scaffold_text
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import build
from mcpmint.render import models

from .conftest import SPECS
from .support import clean_env, generate_spec_text, mcpmint, run

MANIFEST = SPECS / "internal-tools.yaml"  # two HTTP tools and a handler, all with results


def _mcpmint(folder: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "mcpmint", *arguments], cwd=folder, env=clean_env())


def _large_spec(operations: int = 150) -> str:
    """An API whose all-mode tools/list is ~130,000 estimated tokens (over LARGE_TOKENS)."""
    words = " ".join(f"word{i}" for i in range(300))
    fields = {f"f{j}": {"type": "string", "description": words[:200]} for j in range(20)}
    paths = {
        f"/things{i}/{{id}}": {
            "get": {
                "operationId": f"getThing{i}",
                "summary": f"Get thing {i}",
                "description": f"Returns thing {i}. {words}",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {
                    "200": {
                        "description": "The thing.",
                        "content": {
                            "application/json": {"schema": {"type": "object", "properties": fields}}
                        },
                    }
                },
            }
        }
        for i in range(operations)
    }
    return json.dumps(
        {
            "openapi": "3.0.3",
            "info": {"title": "Big", "version": "1"},
            "servers": [{"url": "https://big.example/api"}],
            "paths": paths,
        }
    )


def test_a_large_api_gets_dynamic_mode_offered_in_its_config_and_a_warning_in_all_mode(
    tmp_path: Path,
) -> None:
    out, printed = generate_spec_text(tmp_path, _large_spec())
    text = (out / "mcpmint.yaml").read_text(encoding="utf-8")
    assert "tools" not in yaml.safe_load(text)  # the config rebuilds what was generated
    assert "# This API is large" in text and "#   mode: dynamic" in text
    assert "spec.yaml: warning: tools/list lists all 150 tools, ~" in printed
    assert "tools: {mode: dynamic}" in printed and "output: {token_budget: N}" in printed
    # The user uncomments dynamic mode: no warning; the mode change is review.
    (out / "mcpmint.yaml").write_text(
        text.replace("# tools:", "tools:").replace("#   mode: dynamic", "  mode: dynamic"),
        encoding="utf-8",
    )
    again = _mcpmint(out, "generate")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "tools/list lists all" not in again.stdout + again.stderr
    assert '(server): tool mode changed: tools.mode: "all" -> "dynamic"' in again.stdout
    # Back to all mode with a budget that allows it: the user's choice, so no warning.
    (out / "mcpmint.yaml").write_text(
        "sources:\n  - spec: ../spec.yaml\noutput:\n  token_budget: 200000\n", encoding="utf-8"
    )
    budgeted = _mcpmint(out, "generate")
    assert budgeted.returncode == 0, budgeted.stdout + budgeted.stderr
    assert "tools/list lists all" not in budgeted.stdout + budgeted.stderr


def test_a_small_api_keeps_the_plain_scaffold_and_no_warning(tmp_path: Path) -> None:
    shutil.copy(SPECS / "petstore.yaml", tmp_path / "petstore.yaml")
    done = _mcpmint(tmp_path, "generate", "petstore.yaml", "-o", "out")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tools/list lists all" not in done.stdout + done.stderr
    text = (tmp_path / "out" / "mcpmint.yaml").read_text(encoding="utf-8")
    assert text == scaffold_text("../petstore.yaml", "petstore")


# ------------------------------------------------------------------------------- result models
def namespace_of(source: str) -> dict[str, Any]:
    """Import the generated module text (audited: classes and constants only)."""
    assert models.audit(source) == ""
    module = types.ModuleType("generated_models")
    sys.modules[module.__name__] = module  # pydantic looks its module up while building
    try:
        exec(compile(source, "models.py", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module.__dict__


def test_handler_tools_keep_their_result_models_and_http_tools_lose_theirs() -> None:
    sink = DiagnosticSink()
    server = build(MANIFEST, sink)

    every = namespace_of(models.models_source(server, sink, every_result=True))
    handlers = namespace_of(models.models_source(server, sink, every_result=False))

    assert not sink.has_errors, [d.render() for d in sink]
    assert sorted(every["RESULTS"]) == [
        "internal_add_note",
        "internal_get_customer",
        "internal_score_lead",
    ]
    assert sorted(handlers["RESULTS"]) == ["internal_score_lead"]
    assert sorted(handlers["ARGUMENTS"]) == sorted(every["ARGUMENTS"])
    assert "GetCustomerResult" in every and "GetCustomerResult" not in handlers
    # The models that are there still validate what they describe.
    score = handlers["RESULTS"]["internal_score_lead"]
    assert handlers["ARGUMENTS"]["internal_get_customer"].model_validate({"customer_id": "1"})
    assert score.model_fields  # a real model, not a placeholder


def test_the_module_says_why_results_are_missing() -> None:
    sink = DiagnosticSink()
    server = build(MANIFEST, sink)

    source = models.models_source(server, sink, every_result=False)

    assert "# Handler tools only (`output.result_models` in mcpmint.yaml)" in source
    assert "result_models" not in models.models_source(server, sink, every_result=True)


@pytest.mark.parametrize(
    ("policy", "tokens", "every"),
    [
        ("auto", LARGE_TOKENS, True),
        ("auto", LARGE_TOKENS + 1, False),
        ("all", 10 * LARGE_TOKENS, True),
        ("handlers", 10, False),
    ],
)
def test_the_policy_follows_the_config_and_the_size_of_the_api(
    policy: str, tokens: int, every: bool
) -> None:
    assert result_models_for(policy, tokens) is every


@pytest.mark.parametrize(("config", "classes"), [("", 0), ("output: {result_models: all}", 150)])
def test_a_large_api_gets_result_models_only_when_asked(
    tmp_path: Path, config: str, classes: int
) -> None:
    (tmp_path / "spec.json").write_text(_large_spec(), encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    (project / "mcpmint.yaml").write_text(
        f"sources:\n  - spec: ../spec.json\n{config}\n", encoding="utf-8"
    )
    code, out, err = mcpmint("generate", cwd=project)

    assert code == 0, out + err
    [module] = project.glob("src/*/_generated/models.py")
    text = module.read_text(encoding="utf-8")
    assert text.count("Result(BaseModel)") == classes
    assert text.count("Arguments(BaseModel)") == 150


def test_a_generated_server_loads_its_catalogue_with_the_collector_off_and_then_freezes_it(
    tmp_path: Path,
) -> None:
    out, _ = generate_spec_text(tmp_path, _large_spec())
    results = []
    for before in ("", "gc.disable()\n"):  # an application that runs without the collector
        probe = (
            f"import gc, json\n{before}import big_mcp.server as server\n"
            "print(json.dumps([gc.isenabled(), gc.get_freeze_count(), len(server.CATALOG.tools)]))"
        )
        env = clean_env(PYTHONPATH=str(out / "src"))
        done = run([sys.executable, "-c", probe], cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        results.append(json.loads(done.stdout))
    (enabled, frozen, tools), (enabled_after_off, _, _) = results
    assert enabled and tools == 150
    assert frozen > 0  # gc.freeze() ran: the catalogue is out of the collector's sight
    assert not enabled_after_off  # the collector is left as the importer had it
