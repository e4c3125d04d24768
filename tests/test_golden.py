"""Golden trees: each spec's generated package, committed under tests/golden/, compared whole.

Regenerate them with `pytest tests/test_golden.py --update-golden` and review the diff.
"""

from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path

import pytest

from mcpmint.config import load_config
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import RenderOptions, build, build_config, render_server
from mcpmint.render.templates import FileTree
from mcpmint.write.files import MANIFEST, manifest_text, write_tree

from .conftest import REPO, SPECS
from .support import BAR_COMMANDS, BAR_IDS, clean_env, run

GOLDEN = REPO / "tests" / "golden"
GOLDEN_SPECS = {
    "petstore": SPECS / "petstore.yaml",
    "petstore-plus": SPECS / "petstore-plus.yaml",
    "petstore-v2": SPECS / "petstore-v2.yaml",
    "wire-plan-3.1": SPECS / "wire-plan-3.1" / "oas31.yaml",
    "internal-tools": SPECS / "internal-tools.yaml",  # a tool manifest: HTTP and handler tools
    "mixed": SPECS / "mixed" / "mcpmint.yaml",  # a config: OpenAPI + manifest sources
    # Every parameter style in every location: its generated tests' oracle reads them all.
    "styles": SPECS / "styles.yaml",
}
UPDATE_HINT = "run `pytest tests/test_golden.py --update-golden` and review the diff"


def golden_tree(name: str) -> FileTree:
    spec, folder = GOLDEN_SPECS[name], GOLDEN / name
    sink = DiagnosticSink()
    if spec.name == "mcpmint.yaml":  # a project config: its own sources, no scaffolded config
        config = load_config(spec, sink)
        assert config is not None, [d.render() for d in sink]
        server = build_config(config, sink)
        first = Path(os.path.relpath(config.source.spec, folder)).as_posix()
        return render_server(server, RenderOptions(first, scaffold_config=False), sink)
    server = build(spec, sink)
    return render_server(
        server, RenderOptions(Path(os.path.relpath(spec, folder)).as_posix()), sink
    )


def expected_tree(name: str) -> dict[str, str]:
    tree = golden_tree(name)
    manifest = manifest_text(tree.generated, scaffold=tree.scaffold)
    return {**tree.scaffold, **tree.generated, MANIFEST: manifest}


def on_disk(folder: Path) -> dict[str, str]:
    return {
        path.relative_to(folder).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


@pytest.mark.parametrize("name", sorted(GOLDEN_SPECS))
def test_generated_tree_matches_golden(name: str, request: pytest.FixtureRequest) -> None:
    folder = GOLDEN / name
    expected = expected_tree(name)
    if request.config.getoption("--update-golden"):
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        sink = DiagnosticSink()
        write_tree(golden_tree(name), folder, sink=sink)
        assert not sink.has_errors
    actual = on_disk(folder)
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    assert not missing, f"missing from golden {name}: {missing}; {UPDATE_HINT}"
    assert not extra, f"extra files in golden {name}: {extra}; {UPDATE_HINT}"
    for path in sorted(expected):
        if expected[path] != actual[path]:
            diff = "".join(
                difflib.unified_diff(
                    actual[path].splitlines(keepends=True),
                    expected[path].splitlines(keepends=True),
                    f"golden/{name}/{path}",
                    "generated",
                )
            )
            pytest.fail(f"{name}/{path} differs from golden; {UPDATE_HINT}\n{diff[:5000]}")


def golden_env(name: str) -> dict[str, str]:
    return clean_env(PYTHONPATH=str(GOLDEN / name / "src"), MYPYPATH=str(GOLDEN / name / "src"))


@pytest.mark.parametrize("name", sorted(GOLDEN_SPECS))
def test_golden_package_passes_its_own_tests(name: str) -> None:
    done = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=GOLDEN / name,
        env=golden_env(name),
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def _bar_params() -> list[object]:
    """Every golden against every command of the bar; mypy --strict (seconds a package) in
    the slow tier (CI runs both tiers)."""
    params: list[object] = []
    for name in sorted(GOLDEN_SPECS):
        for command, label in zip(BAR_COMMANDS, BAR_IDS, strict=True):
            slow = "mypy" in label
            marks = [pytest.mark.slow] if slow else []
            params.append(pytest.param(name, command, id=f"{label}-{name}", marks=marks))
    return params


@pytest.mark.parametrize(("name", "command"), _bar_params())
def test_golden_package_meets_our_bar(name: str, command: list[str]) -> None:
    done = run([sys.executable, *command], cwd=GOLDEN / name, env=golden_env(name))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


_ONE_TOOL_SERVERS = """
import anyio
from mcp import Client
from tests import test_generated as generated

async def listed(server):
    async with Client(server) as client:
        return [tool.name for tool in (await client.list_tools()).tools]

async def main():
    every = await listed(generated.Upstream().server())
    assert every == [entry["name"] for entry in generated.CASES["toolsList"]], every
    for name in sorted(generated.CASES["calls"]):
        assert await listed(generated.Upstream().server(name)) == [name], name
    print(len(every), len(generated.CASES["calls"]))

anyio.run(main)
"""


def test_a_golden_packages_tests_call_each_tool_on_a_server_of_that_tool_alone() -> None:
    """The generated tests of one tool run a server where only that tool exists (the MCP
    client lists the tools before it checks a result: every tool of a large API, for every
    call, was most of their time); the snapshot test lists them all."""
    done = run(
        [sys.executable, "-c", _ONE_TOOL_SERVERS],
        cwd=GOLDEN / "petstore-plus",
        env=golden_env("petstore-plus"),
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    every, called = (int(number) for number in done.stdout.split())
    assert every >= called > 1  # several tools, each alone in turn
