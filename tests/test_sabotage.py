"""Sabotage: a mistake put into mcpmint on purpose must fail the generated tests of the golden
packages, not only mcpmint's own suite (docs/generated-package.md, "What the generated tests
catch"). Each sabotage edits a copy of the generator, regenerates every golden package with
it and runs that package's own tests; the test holds which goldens catch it.

Run `pytest tests/test_sabotage.py -s` to see every golden's verdict on every sabotage.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from .support import REPO, clean_env, run
from .test_golden import GOLDEN_SPECS

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Sabotage:
    name: str
    file: str  # under generator/mcpmint/
    edits: tuple[tuple[str, str], ...]  # (text, its replacement), each found once
    caught_by: frozenset[str]  # the goldens whose own tests must fail


SABOTAGES = (
    Sabotage(
        "runtime: the base path dropped",
        "runtime/upstreams.py",
        (
            (
                'return f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")',
                'return f"{parts.scheme}://{parts.netloc}", ""',
            ),
        ),
        frozenset({"petstore", "petstore-plus", "petstore-v2", "wire-plan-3.1", "mixed", "styles"}),
    ),
    Sabotage(
        "generator: the explode default flipped",
        "build/frontends/openapi.py",
        (('else style == "form",', 'else style != "form",'),),
        frozenset({"styles", "wire-plan-3.1"}),
    ),
    Sabotage(
        "generator: confirmation exempts idempotent writes",
        "ir.py",
        (
            (
                'return "none" if annotations.read_only else "required"',
                'return "none" if annotations.read_only or annotations.idempotent else "required"',
            ),
        ),
        frozenset({"petstore-plus"}),
    ),
    Sabotage(
        "generator: header parameters placed in the query",
        "build/frontends/openapi.py",
        (
            (
                "location=location,  # type: ignore[arg-type]",
                'location="query" if location == "header" else location,  # type: ignore',
            ),
            ("style=style,", 'style="form" if location == "header" else style,'),
        ),
        frozenset({"petstore-plus", "styles", "wire-plan-3.1"}),
    ),
    Sabotage(
        "runtime: header parameters sent in the query",
        "runtime/request.py",
        (
            (
                "headers.append((param.name, _header_value(param, value)))",
                'query.append(f"{_enc(param.name)}={_enc(_header_value(param, value))}")',
            ),
        ),
        frozenset({"petstore-plus", "styles", "wire-plan-3.1"}),
    ),
)

_GENERATE = """
import sys
from pathlib import Path

import mcpmint
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.write.files import write_tree
from tests.test_golden import golden_tree

assert Path(mcpmint.__file__).is_relative_to(sys.argv[1]), mcpmint.__file__
for name in sys.argv[3:]:
    sink = DiagnosticSink()
    write_tree(golden_tree(name), Path(sys.argv[2]) / name, sink=sink)
    assert not sink.has_errors, [d.render() for d in sink]
"""


def sabotaged_copy(root: Path, sabotage: Sabotage) -> Path:
    """mcpmint's generator and templates under `root`, with `sabotage` applied."""
    shutil.copytree(
        REPO / "generator", root / "generator", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(REPO / "templates", root / "templates")
    (root / "specs").mkdir()
    for schema in ("mcpmint.schema.json", "manifest.schema.json"):
        shutil.copy(REPO / "specs" / schema, root / "specs" / schema)
    target = root / "generator" / "mcpmint" / sabotage.file
    text = target.read_text(encoding="utf-8")
    for old, new in sabotage.edits:
        assert text.count(old) == 1, f"{sabotage.name}: the line to break moved: {old}"
        text = text.replace(old, new)
    target.write_text(text, encoding="utf-8")
    return root / "generator"


def golden_verdicts(tmp_path: Path, sabotage: Sabotage) -> dict[str, str]:
    """Each golden package, made by the sabotaged generator: its own tests' closing line."""
    generator = sabotaged_copy(tmp_path / "mcpmint", sabotage)
    out = tmp_path / "out"
    names = sorted(GOLDEN_SPECS)
    done = run(
        [sys.executable, "-c", _GENERATE, str(generator), str(out), *names],
        cwd=REPO,
        env=clean_env(PYTHONPATH=f"{generator}:{REPO}"),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    verdicts = {}
    for name in names:
        tests = run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
            cwd=out / name,
            env=clean_env(PYTHONPATH=str(out / name / "src")),
        )
        closing = (tests.stdout.strip().splitlines() or ["(no output)"])[-1]
        verdicts[name] = ("caught: " if tests.returncode else "missed: ") + closing
    return verdicts


@pytest.mark.parametrize("sabotage", SABOTAGES, ids=[s.name for s in SABOTAGES])
def test_the_golden_packages_own_tests_catch_the_sabotage(
    sabotage: Sabotage, tmp_path: Path
) -> None:
    verdicts = golden_verdicts(tmp_path, sabotage)
    print(f"\n{sabotage.name}:")
    for name, verdict in verdicts.items():
        print(f"  {name}: {verdict}")
    caught = {name for name, verdict in verdicts.items() if verdict.startswith("caught")}
    assert caught >= sabotage.caught_by, verdicts
