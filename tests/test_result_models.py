"""Typed result models (`output.result_models`, issue #8): every tool, or handler tools only.

Argument models are always generated. A handler returns its result model, so handler tools
always get one; an HTTP tool's result is the upstream's JSON, which no generated code parses,
and on a large API those models are megabytes of code (GitHub's: 1.7 MB, 15 s).
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from mcpmint import models
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.largeapi import LARGE_TOKENS, result_models_for
from mcpmint.pipeline import build

from .conftest import SPECS
from .support import mcpmint

MANIFEST = SPECS / "internal-tools.yaml"  # two HTTP tools and a handler, all with results


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


def _large_spec(operations: int = 150) -> dict[str, Any]:
    """~130,000 estimated tokens listed in all mode: a large API."""
    words = " ".join(f"word{i}" for i in range(300))
    fields = {f"f{j}": {"type": "string", "description": words[:200]} for j in range(20)}
    result = {"type": "object", "properties": fields}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Big", "version": "1"},
        "servers": [{"url": "https://big.example/api"}],
        "paths": {
            f"/things{i}": {
                "get": {
                    "operationId": f"getThing{i}",
                    "description": f"Returns thing {i}. {words}",
                    "responses": {
                        "200": {
                            "description": "The thing.",
                            "content": {"application/json": {"schema": result}},
                        }
                    },
                }
            }
            for i in range(operations)
        },
    }


@pytest.mark.parametrize(("config", "classes"), [("", 0), ("output: {result_models: all}", 150)])
def test_a_large_api_gets_result_models_only_when_asked(
    tmp_path: Path, config: str, classes: int
) -> None:
    (tmp_path / "spec.json").write_text(json.dumps(_large_spec()), encoding="utf-8")
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
