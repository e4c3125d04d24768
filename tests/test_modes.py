"""Tool modes, the token budget and concise results from `mcpmint.yaml` (issue 8), on
petstore-plus: the config is read, checked against the tools, written into tools.json, and
the runtime built from that very catalog lists and calls what the config says."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from mcpmint import ir
from mcpmint.build.toolmodes import estimate_tokens, listed_definitions
from mcpmint.config import load_config
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import build_config
from mcpmint.render.templates import catalog, tool_definition
from mcpmint.runtime.catalog import load_catalog
from mcpmint.runtime.server import build_server

from .support import errors_of, mcpmint, package_tests, write_config

pytestmark = pytest.mark.anyio
META = ["petstore_search_tools", "petstore_describe_tool", "petstore_call_tool"]


def server_of(folder: Path, body: str) -> ir.Server:
    sink = DiagnosticSink()
    config = load_config(write_config(folder, body), sink)
    assert config is not None, [d.render() for d in sink]
    return build_config(config, sink)


def runtime_of(server: ir.Server, respond: Any = None) -> Any:
    """The runtime's server over the very catalog the generator writes."""
    transport = httpx2.MockTransport(respond or (lambda request: httpx2.Response(200, json=[])))
    return build_server(
        load_catalog(json.loads(json.dumps(catalog(server)))),
        transport=transport,
        environ={"PETSTORE_API_KEY_AUTH": "k", "PETSTORE_AUDIT": "off"},
    )


# ---------------------------------------------------------------------- the token budget
def all_tokens(folder: Path) -> int:
    return estimate_tokens([tool_definition(t) for t in server_of(folder, "").tools])[1]


def test_generate_above_the_token_budget_fails_at_the_key_and_names_the_biggest_tools(
    tmp_path: Path,
) -> None:
    budget = all_tokens(tmp_path) - 1
    config = write_config(tmp_path, f"output:\n  token_budget: {budget}\n")
    code, out, err = mcpmint("generate", str(config))
    assert code == 2, out + err
    [line] = [x for x in err.splitlines() if ": error: " in x]
    assert line.startswith(f"{config.as_posix()}:4:3: error: tools/list would be ~{budget + 1}")
    assert f"over the budget of {budget}; the biggest: petstore_" in line
    biggest = re.findall(r"(petstore_\w+) \(~(\d+)\)", line)
    sizes = [int(size) for _, size in biggest]
    assert len(biggest) == 8 and sizes == sorted(sizes, reverse=True)
    assert "tools.mode: dynamic" in err and "hidden: true" in err and "exclude" in err
    assert not (tmp_path / "src").exists()


def test_generate_within_the_token_budget_writes_the_server(tmp_path: Path) -> None:
    budget = all_tokens(tmp_path)
    config = write_config(tmp_path, f"output:\n  token_budget: {budget}\n")
    code, out, err = mcpmint("generate", str(config))
    assert code == 0, out + err
    assert (tmp_path / "src/petstore_mcp/_generated/tools.json").is_file()


def test_the_budget_counts_only_what_dynamic_mode_lists(tmp_path: Path) -> None:
    body = "output:\n  token_budget: 1500\ntools:\n  mode: dynamic\n  core: [list_pets]\n"
    server = server_of(tmp_path, body)
    listed = listed_definitions(server)
    assert [d["name"] for d in listed] == [*META, "petstore_list_pets"]
    (tmp_path / "all").mkdir()
    assert estimate_tokens(listed)[1] <= 1500 < all_tokens(tmp_path / "all")
    code, out, err = mcpmint("tools", str(tmp_path / "mcpmint.yaml"), "--json")
    assert code == 0, err
    summary = json.loads(out)["summary"]
    assert summary["listed"] == {
        "mode": "dynamic",
        "tools": 4,
        "bytes": estimate_tokens(listed)[0],
        "estimatedTokens": estimate_tokens(listed)[1],
    }


# ---------------------------------------------------------------------- the config
@pytest.mark.parametrize(
    ("body", "where", "message"),
    [
        (
            "tools:\n  core: [list_petz]\n",
            ":4:10",
            "no tool named 'petstore_list_petz'",
        ),
        (
            "tools:\n  mode: groups\n  listed_groups: [dogs]\n",
            ":5:19",
            "no group named 'dogs'",
        ),
        (
            "tools:\n  mode: groups\n  groups:\n    read: [petstore_get_*, cats_*]\n",
            ":6:5",
            "'cats_*' matches no tool",
        ),
        (
            "tools:\n  response_format:\n    list_kittens: {fields: [id]}\n",
            ":5:5",
            "no tool named 'petstore_list_kittens'",
        ),
        ("tools:\n  mode: sometimes\n", ":4:3", "tools/mode: 'sometimes' is not one of"),
        ("output:\n  token_budget: 0\n", ":4:3", "output/token_budget: 0 is less than"),
    ],
)
def test_bad_tool_mode_entries_are_located_errors(
    tmp_path: Path, body: str, where: str, message: str
) -> None:
    errors = errors_of(tmp_path, body)
    assert len(errors) == 1, errors
    assert f"mcpmint.yaml{where}: error: {message}" in errors[0]


def test_the_closest_tool_names_are_the_hint_for_a_misspelt_core_tool(tmp_path: Path) -> None:
    [error] = errors_of(tmp_path, "tools:\n  core: [list_petz]\n")
    assert "closest: petstore_list_pets" in error


def test_groups_default_to_one_group_per_tag_and_all_are_listed(tmp_path: Path) -> None:
    server = server_of(tmp_path, "tools:\n  mode: groups\n")
    assert server.tool_modes is not None
    groups = server.tool_modes["groups"]
    assert sorted(groups) == ["pets", "store", "users"]
    assert "petstore_list_pets" in groups["pets"]
    assert server.tool_modes["listedGroups"] == ["pets", "store", "users"]


async def test_groups_mode_lists_the_configured_groups_through_the_runtime(
    tmp_path: Path,
) -> None:
    body = "tools:\n  mode: groups\n  core: [list_categories]\n  listed_groups: [pets]\n"
    server = server_of(tmp_path, body)
    async with Client(runtime_of(server)) as client:
        tools = (await client.list_tools()).tools
    names = [tool.name for tool in tools]
    assert names == [d["name"] for d in listed_definitions(server)]
    assert "petstore_list_categories" in names and "petstore_get_pet" in names
    assert "petstore_create_stores_inventory_adjustments_by_category" not in names


def test_without_a_tools_section_tools_json_has_no_tool_modes(tmp_path: Path) -> None:
    server = server_of(tmp_path, "")
    assert server.tool_modes is None
    assert "toolModes" not in catalog(server)


# ---------------------------------------------------------------------- dynamic mode
async def test_dynamic_mode_lists_exactly_what_the_generator_estimated(tmp_path: Path) -> None:
    server = server_of(tmp_path, "tools:\n  mode: dynamic\n  core: [list_pets]\n")
    async with Client(runtime_of(server)) as client:
        tools = (await client.list_tools()).tools
        found = await client.call_tool("petstore_search_tools", {"query": "remove a pet"})
    listed = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]
    assert listed == listed_definitions(server)
    assert found.structured_content is not None
    assert found.structured_content["tools"][0]["name"] == "petstore_delete_pet"


async def test_call_tool_reaches_a_spec_tool_with_its_arguments(tmp_path: Path) -> None:
    seen: list[httpx2.Request] = []

    def respond(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={"id": 3, "name": "Rex"})

    server = server_of(tmp_path, "tools:\n  mode: dynamic\n")
    call = {"name": "petstore_get_pet", "arguments": {"petId": 3}}
    async with Client(runtime_of(server, respond)) as client:
        result = await client.call_tool("petstore_call_tool", call)
    assert not result.is_error, result
    assert [r.url.path for r in seen] == ["/v2/pets/3"]


def test_a_spec_tool_named_like_a_dynamic_tool_is_an_error(tmp_path: Path) -> None:
    body = "    overrides:\n      listPets: {name: search_tools}\ntools:\n  mode: dynamic\n"
    [error] = errors_of(tmp_path, body)
    assert "'petstore_search_tools'" in error and "already has one" in error


# ---------------------------------------------------------------------- response_format
CONCISE = "tools:\n  response_format:\n    list_pets: {fields: [id, name], max_items: 1}\n"


def test_response_format_adds_an_optional_argument_to_the_input_schema(tmp_path: Path) -> None:
    server = server_of(tmp_path, CONCISE)
    [tool] = [t for t in server.tools if t.name == "petstore_list_pets"]
    argument = tool.input_schema["properties"]["response_format"]
    assert argument["enum"] == ["concise", "detailed"]
    assert "response_format" not in tool.input_schema.get("required", [])
    assert server.tool_modes is not None
    assert server.tool_modes["responseFormat"] == {
        "petstore_list_pets": {"fields": ["id", "name"], "maxItems": 1, "default": "detailed"}
    }


def test_a_concise_field_missing_from_the_output_schema_is_a_located_warning(
    tmp_path: Path,
) -> None:
    body = (
        "tools:\n  response_format:\n    list_pets: {fields: [id, nmae, owner.name, kind.bark]}\n"
    )
    sink = DiagnosticSink()
    config = load_config(write_config(tmp_path, body), sink)
    assert config is not None
    build_config(config, sink)
    warnings = [d.render() for d in sink.warnings if "response_format" in d.render()]
    assert len(warnings) == 1, warnings
    assert (
        "mcpmint.yaml:5:5: warning: response_format of petstore_list_pets: field 'nmae'"
        in (warnings[0])
    )


async def test_a_concise_result_validates_against_the_tools_output_schema(
    tmp_path: Path,
) -> None:
    pets = [{"id": 1, "name": "Rex", "tag": "dog"}, {"id": 2, "name": "Tom", "tag": "cat"}]
    seen: list[httpx2.Request] = []

    def respond(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json=pets)

    server = server_of(tmp_path, CONCISE)
    async with Client(runtime_of(server, respond)) as client:
        # The SDK client itself checks structuredContent against the output schema.
        result = await client.call_tool("petstore_list_pets", {"response_format": "concise"})
    assert not result.is_error, result
    assert result.structured_content == {"result": [{"id": 1, "name": "Rex"}]}
    assert "response_format" not in str(seen[0].url)


# ---------------------------------------------------------------------- the generated package
@pytest.mark.slow
@pytest.mark.parametrize(
    "body",
    [
        "tools:\n  mode: dynamic\n  core: [get_pet]\n" + CONCISE.removeprefix("tools:\n"),
        "tools:\n  mode: groups\n  listed_groups: [store]\n",
        "tools:\n  mode: dynamic\n  semantic: true\n",
    ],
    ids=["dynamic", "groups", "semantic"],
)
def test_a_package_generated_in_a_tool_mode_passes_its_own_tests(tmp_path: Path, body: str) -> None:
    config = write_config(tmp_path, body)
    code, out, err = mcpmint("generate", str(config))
    assert code == 0, out + err
    done = package_tests(tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
