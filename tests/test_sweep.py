"""The sweep in CI (issue 26): real specs published by their providers give complete servers.

`benchmarks/sweep.py` generates every entry point of `../shared/corpus/sweep/` and of the old
corpus; its table is in docs/corpus.md. The whole sweep takes longer than CI can give it (see
docs/corpus.md for the measured time), so CI runs it on a fixed, varied sample: every class
the sweep found (operation `$ref`s, multi-file specs, media types, undefined schemes, name
collisions, self-referencing schemas, text `$ref`s, empty bodies), the three spec versions, JSON
and YAML. For each: exit 0, no internal error, one tool per operation (its parameters and
body) unless a warning says why, and the generated package's own tests pass.

`test_the_whole_sweep` (marker `sweep`, not selected by default: `pytest -m sweep`) asserts
the same generation results for every spec, without running the generated tests.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from .support import REPO, clean_env


def _sweep() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sweep", REPO / "benchmarks" / "sweep.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SWEEP = _sweep()
CHECKED_OUT = (SWEEP.shared_root() / "sweep" / "SOURCES.tsv").exists()
ENTRIES = {entry["name"]: entry for entry in SWEEP.entries("all")} if CHECKED_OUT else {}
NOT_CHECKED_OUT = pytest.mark.skipif(not CHECKED_OUT, reason="the shared corpus is not checked out")

# Varied: versions, JSON and YAML, single and multi-file, and every class the sweep found.
SAMPLE = (
    "twilio/twilio_accounts_v1.yaml",  # 3.0 YAML
    "hubspot/Conversations/Conversations Inbox & Messages/v3/conversationsInboxMessages.json",
    "hubspot/CRM/Pipeline Governance/2026-09-beta/pipelineGovernance.json",  # content: {}
    "adyen/TransferService-v4.yaml",
    "adyen/A2APaymentsService-v1.json",  # 3.1 JSON
    "akamai/multi/sandbox-api-v1/sandboxes.yaml",  # multi-file, application/tar+gzip
    "okta/idp-oneOfInheritance.yaml",  # `application/json, okta-version=1.0.0`
    "okta/oauth-oneOfInheritance.yaml",  # undefined security schemes
    "okta/governance-production-requests-admin-v1-reference-oneOfInheritance.yaml",
    "ory/kratos-v26.2.0.json",  # undefined scheme
    "ory/hydra-v1.10.7.json",  # Swagger 2.0 JSON
    "openfga/apidocs.swagger.json",  # Swagger 2.0
    "alertmanager/openapi.yaml",  # Swagger 2.0 YAML
    "xero/xero-projects.yaml",
    "pagerduty/integration-slack-service.json",
    "influxdata/legacy.yml",
    "box/openapi-v2026.0.json",
    "ory/keto-v26.2.0.json",
    "oai-petstore-v2",  # the old corpus
    "oai-petstore-separate-v2",  # multi-file Swagger 2.0
    "oai-non-oauth-scopes",  # 3.1
    "osv-petstore-3.2",  # 3.2
    "dcg-auth-3.1",
    "prance-nonascii-pathref",
)
# Entry points that are not valid YAML (SOURCES.tsv says so): a located error, exit 2.
INVALID = frozenset(
    {
        "akamai/multi/appsec-v1/01-configuration.yaml",
        "akamai/multi/appsec-v1/02-security-policies.yaml",
    }
)
LOCATED = re.compile(r"^\S+:\d+:\d+: error: YAML syntax error", re.MULTILINE)


def _checked(row: dict[str, Any]) -> None:
    name = row["name"]
    assert not row["internal_error"], f"{name}: {row['internal_error']}"
    assert row["exit"] == 0, f"{name}: exit {row['exit']}: {row['error']}"
    check = row["check"]
    assert "reader_error" not in check, check
    gaps = check["missing_tools"] + check["missing_parameters"] + check["missing_bodies"]
    assert gaps == 0, f"{name}: operations, parameters or bodies lost unsaid: {check['findings']}"


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sweep")


# Known failures of the generated tests on sample specs, each a bug to fix, not a skip (none
# today): strict xfails, so that a fix turns its entry red until it is removed.
KNOWN: dict[str, str] = {}


def _sample() -> list[object]:
    return [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=KNOWN[name]))
        if name in KNOWN
        else name
        for name in SAMPLE
    ]


@NOT_CHECKED_OUT
@pytest.mark.slow
@pytest.mark.parametrize("name", _sample())
def test_a_sample_of_the_sweep_generates_whole_servers_whose_tests_pass(
    name: str, work: Path
) -> None:
    entry = ENTRIES[name]  # every sample name is an entry point of the corpus
    row = SWEEP.run_one(entry, work, timeout=600, memory_mib=4096)
    _checked(row)
    assert row["tools"] >= 1 or row["operations"] == 0
    out = Path(row["out"])
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "tests"],
        cwd=out,
        env=clean_env(PYTHONPATH=str(out / "src")),
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


@NOT_CHECKED_OUT
@pytest.mark.slow
@pytest.mark.sweep
@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_the_whole_sweep(name: str, work: Path) -> None:
    row = SWEEP.run_one(ENTRIES[name], work, timeout=900, memory_mib=4096)
    if name in INVALID:
        assert row["exit"] == 2 and not row["internal_error"], row
        assert LOCATED.match(row["error"]), row["error"]
    else:
        _checked(row)
