"""Several sources in one server: the merged IR, tools.json, and the runtime's upstreams."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from mcpmint import ir
from mcpmint.config import load_config
from mcpmint.diagnostics import Aborted, DiagnosticSink
from mcpmint.pipeline import GenerateOptions, build, build_config, generate
from mcpmint.render.templates import catalog, settings_rows
from mcpmint.runtime.catalog import CatalogError, load_catalog
from mcpmint.runtime.content import render_text
from mcpmint.runtime.server import build_server as build_runtime_server
from mcpmint.runtime.upstreams import BaseUrlError, NamedUpstream, named_base_url
from mcpmint.write.quickcheck import up_to_date

from .conftest import SPECS
from .support import trees_by_hash_seed


def mixed() -> ir.Server:
    sink = DiagnosticSink()
    config = load_config(SPECS / "mixed" / "mcpmint.yaml", sink)
    assert config is not None
    server = build_config(config, sink)
    assert not sink.has_errors, [d.render() for d in sink]
    return server


def test_the_first_source_is_primary_and_each_other_keeps_its_own_upstream() -> None:
    server = mixed()
    assert (server.distribution, server.package) == ("petcare-mcp", "petcare_mcp")
    assert server.env_prefix == "PETSTORE" and server.base_url == "http://petstore.swagger.io/v1"
    assert server.upstreams == (
        ir.Upstream("support", "https://support.example.com/api", "PETSTORE_SUPPORT_BASE_URL"),
    )
    tools = {tool.name: tool for tool in server.tools}
    assert tools["petstore_list_pets"].upstream == ""
    assert tools["support_open_ticket"].upstream == "support"
    assert tools["support_suggest_reply"].upstream == ""  # a handler calls no upstream


def test_other_sources_schemes_and_model_classes_are_prefixed_with_their_namespace() -> None:
    server = mixed()
    [scheme] = server.security_schemes
    assert scheme.name == "support.desk_key"
    assert scheme.env == (("value", "PETSTORE_SUPPORT_DESK_KEY"),)
    tools = {tool.name: tool for tool in server.tools}
    assert tools["support_open_ticket"].security == ((ir.SchemeUse("support.desk_key"),),)
    assert tools["support_open_ticket"].class_stem == "SupportOpenTicket"
    assert tools["petstore_list_pets"].class_stem == "ListPets"


def test_a_single_source_catalog_has_no_upstreams_resources_or_prompts_keys() -> None:
    sink = DiagnosticSink()
    data = catalog(build(SPECS / "petstore.yaml", sink))
    assert not {"upstreams", "resources", "prompts"} & set(data)
    assert all("upstream" not in tool and "scopes" not in tool for tool in data["tools"])


def mixed_catalog_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(catalog(mixed())))
    return data


def test_the_runtime_reads_upstreams_resources_and_prompts_of_the_mixed_catalog() -> None:
    loaded = load_catalog(mixed_catalog_data())
    assert set(loaded.upstreams) == {"support"}
    assert [r.name for r in loaded.resources] == [
        "petstore_get_pet",
        "support_refund_policy",
        "support_ticket",
    ]
    assert [p.name for p in loaded.prompts] == ["support_triage_ticket"]
    pet, policy, ticket = loaded.resources
    assert ticket.match("support://tickets/T-1") == {"ticket_id": "T-1"}
    assert ticket.match("support://tickets/T-1/x") is None
    assert policy.match("support://policies/refunds") == {}
    assert pet.match("petstore://pets/7") == {"petId": "7"}


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        (lambda d: d["tools"][-1].update(upstream="nowhere"), "/tools/4/upstream"),
        (lambda d: d["upstreams"]["support"].update(env="lower-case"), "/upstreams/support/env"),
        (lambda d: d["resources"][2].update(uriTemplate="support://{a}{+b}"), "/resources/2"),
        (lambda d: d["tools"][0].update(handler=True), "/tools/0/handler"),
    ],
)
def test_the_runtime_refuses_malformed_upstreams_and_resources(change: Any, pointer: str) -> None:
    data = mixed_catalog_data()
    change(data)
    with pytest.raises(CatalogError) as info:
        load_catalog(data)
    assert info.value.pointer.startswith(pointer), info.value


def test_a_named_upstream_without_a_base_url_names_its_variable() -> None:
    upstream = NamedUpstream("support", "", "PETSTORE_SUPPORT_BASE_URL")
    with pytest.raises(BaseUrlError, match="set PETSTORE_SUPPORT_BASE_URL"):
        named_base_url(upstream, {})
    assert named_base_url(upstream, {"PETSTORE_SUPPORT_BASE_URL": "https://x.test/a"}) == (
        "https://x.test/a"
    )
    with pytest.raises(BaseUrlError, match="not usable"):
        named_base_url(upstream, {"PETSTORE_SUPPORT_BASE_URL": "ftp://x.test"})


def test_prompt_text_is_filled_by_plain_substitution_never_evaluated() -> None:
    text = "Hi {name}, {{literal}} {missing}. {name.__class__}"
    assert render_text(text, {"name": "{0} ${x} {{y}}"}) == "Hi {0} ${x} {{y}}, {literal} . "


def write_config(folder: Path, body: str) -> Path:
    shutil.copy(SPECS / "petstore.yaml", folder / "petstore.yaml")
    shutil.copy(SPECS / "internal-tools.yaml", folder / "tools.yaml")
    path = folder / "mcpmint.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def test_selected_get_operations_become_resource_templates_and_stay_tools(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        "sources:\n  - spec: petstore.yaml\n    resources: {tags: [pets], methods: [GET]}\n",
    )
    sink = DiagnosticSink()
    config = load_config(path, sink)
    assert config is not None
    server = build_config(config, sink)
    assert [(r.name, r.uri_template) for r in server.resources] == [
        ("petstore_list_pets", "petstore://pets"),  # its `limit` is optional: not in the URI
        ("petstore_show_pet_by_id", "petstore://pets/{petId}"),
    ]
    assert {"petstore_list_pets", "petstore_show_pet_by_id"} <= {t.name for t in server.tools}
    listed = server.resources[0].request
    assert listed is not None and listed.parameters == ()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "sources:\n  - spec: petstore.yaml\n    resources: {operations: [createPets]}\n",
            "petstore_create_pets (POST) cannot be a resource template",
        ),
        (
            "sources:\n  - spec: petstore.yaml\n    resources: {operations: [nothing]}\n",
            "the resources selection picks none of this source's tools",
        ),
        (
            "sources:\n  - manifest: tools.yaml\n    resources: {methods: [GET]}\n",
            "'resources' applies to OpenAPI specs, not manifests",
        ),
    ],
)
def test_resource_selections_that_cannot_work_are_located_errors(
    tmp_path: Path, body: str, message: str
) -> None:
    path = write_config(tmp_path, body)
    sink = DiagnosticSink()
    config = load_config(path, sink)
    if config is not None:
        with pytest.raises(Aborted):
            build_config(config, sink)
    rendered = "\n".join(d.render() for d in sink.errors)
    assert message in rendered and f"{path.as_posix()}:3:" in rendered, rendered


def test_check_sees_an_edit_to_any_source_not_only_the_first(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(SPECS / "mixed", project / "mixed")
    shutil.copy(SPECS / "petstore.yaml", project / "petstore.yaml")
    sink = DiagnosticSink()
    config = load_config(project / "mixed" / "mcpmint.yaml", sink)
    assert config is not None
    out = tmp_path / "out"
    generate(config, GenerateOptions(output=out), sink)
    assert up_to_date(config, GenerateOptions(output=out, check=True))
    manifest = project / "mixed" / "support.yaml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace("Drafts a reply", "Writes a reply"),
        encoding="utf-8",
    )
    assert not up_to_date(config, GenerateOptions(output=out, check=True))
    report = generate(config, GenerateOptions(output=out, check=True), sink)
    assert report.changed  # the tools.json of the desk's tool differs


@pytest.mark.parametrize("spec", ["mixed/mcpmint.yaml", "internal-tools.yaml"])
def test_R5_manifests_and_several_sources_give_identical_bytes_whatever_the_hash_seed(
    spec: str, tmp_path: Path
) -> None:
    digests = trees_by_hash_seed(SPECS / spec, tmp_path)
    assert digests[0] == digests[1]


# -------------------------------------------------------------- other sources' server variables
GEO_SPEC = """\
openapi: 3.0.3
info: {title: Geo, version: "1"}
servers:
  - url: "https://{region}.geo.example.com/v1"
    variables:
      region: {default: eu, enum: [eu, us]}
paths:
  /places:
    get:
      operationId: listPlaces
      responses:
        "200":
          description: Places.
          content:
            application/json:
              schema: {type: object, properties: {count: {type: integer}}}
"""
GEO_CONFIG = """\
sources:
  - spec: petstore.yaml
  - spec: geo.yaml
    namespace: geo
"""


async def _call_geo(data: dict[str, Any], environ: dict[str, str]) -> tuple[Any, list[str]]:
    hosts: list[str] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        hosts.append(request.url.host)
        return httpx2.Response(200, json={"count": 2})

    server = build_runtime_server(
        load_catalog(data), transport=httpx2.MockTransport(answer), environ=environ
    )
    async with Client(server) as client:
        result = await client.call_tool("geo_list_places", {})
    return result, hosts


@pytest.mark.anyio
async def test_another_sources_server_variables_are_set_by_its_own_variables(
    tmp_path: Path,
) -> None:
    shutil.copy(SPECS / "petstore.yaml", tmp_path / "petstore.yaml")
    (tmp_path / "geo.yaml").write_text(GEO_SPEC, encoding="utf-8")
    (tmp_path / "mcpmint.yaml").write_text(GEO_CONFIG, encoding="utf-8")
    sink = DiagnosticSink()
    config = load_config(tmp_path / "mcpmint.yaml", sink)
    assert config is not None
    server = build_config(config, sink)
    data = json.loads(json.dumps(catalog(server)))
    assert data["upstreams"]["geo"]["urlTemplate"] == "https://{region}.geo.example.com/v1"
    rows = {row["name"]: row["meaning"] for row in settings_rows(server)}
    assert "`eu`, `us`" in rows["PETSTORE_GEO_SERVER_REGION"]

    audit = {"PETSTORE_AUDIT": "off"}
    result, hosts = await _call_geo(data, audit)
    assert not result.is_error and hosts == ["eu.geo.example.com"]  # the spec's default
    result, hosts = await _call_geo(data, {**audit, "PETSTORE_GEO_SERVER_REGION": "us"})
    assert not result.is_error and hosts == ["us.geo.example.com"]
    # The same enum rule as the first source's: a value outside it sends nothing.
    result, hosts = await _call_geo(data, {**audit, "PETSTORE_GEO_SERVER_REGION": "evil.com"})
    assert result.is_error and hosts == []
    message = " ".join(getattr(c, "text", "") for c in result.content)
    assert "'region' (PETSTORE_GEO_SERVER_REGION) must be one of: eu, us" in message
    # The first source's variable does not reach another source.
    result, hosts = await _call_geo(data, {**audit, "PETSTORE_SERVER_REGION": "us"})
    assert hosts == ["eu.geo.example.com"]
