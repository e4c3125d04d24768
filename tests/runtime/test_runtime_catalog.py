"""load_catalog: the tools.json contract, and what it refuses at load time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from runtime_support import catalog_data, one_tool_catalog, param

from mcpmint.runtime.catalog import CatalogError, load_catalog


def test_loads_the_documented_shape() -> None:
    catalog = load_catalog(catalog_data())
    assert catalog.server.env_prefix == "PETS"
    assert catalog.upstream.timeout_seconds == 5.0
    assert catalog.security_schemes["QueryKey"].location == "query"
    tool = catalog.tool("pets_get_pet")
    assert tool is not None
    assert [p.location for p in tool.request.parameters] == [
        "path",
        "query",
        "query",
        "query",
        "header",
        "cookie",
    ]
    assert tool.argument_names == {"petId", "limit", "q", "tags", "x_request_id", "theme"}
    assert catalog.tool("missing") is None


def test_the_loaded_catalog_does_not_share_the_input_data() -> None:
    data = catalog_data()
    catalog = load_catalog(data)
    data["tools"][0]["inputSchema"]["properties"].clear()
    tool = catalog.tool("pets_get_pet")
    assert tool is not None and "petId" in tool.input_schema["properties"]


def test_without_copy_the_catalog_uses_the_handed_over_data() -> None:
    # The generated server hands over its freshly parsed tools.json (no copy at start-up).
    data = catalog_data()
    catalog = load_catalog(data, copy=False)
    tool = catalog.tool("pets_get_pet")
    assert tool is not None and tool.input_schema is data["tools"][0]["inputSchema"]


Mutation = Callable[[dict[str, Any]], object]


def _tool0(data: dict[str, Any]) -> dict[str, Any]:
    tool: dict[str, Any] = data["tools"][0]
    return tool


@pytest.mark.parametrize(
    ("mutate", "pointer", "message"),
    [
        (lambda d: d.update(format=2), "/format", "unsupported format"),
        (lambda d: _tool0(d).update(name="bad name"), "/tools/0/name", "not a valid tool name"),
        (lambda d: d["tools"].append(d["tools"][0]), "/tools/10/name", "duplicate tool name"),
        (
            lambda d: _tool0(d)["request"].update(path="/pets/{other}"),
            "/tools/0/request/parameters",
            "do not match",
        ),
        (
            lambda d: _tool0(d)["request"].update(path="/a/../{petId}"),
            "/tools/0/request/path",
            "dot segments",
        ),
        (
            lambda d: _tool0(d)["request"].update(method="BREW"),
            "/tools/0/request/method",
            "unsupported method",
        ),
        (
            lambda d: _tool0(d)["request"]["parameters"][4].update(name="Authorization"),
            "/tools/0/request/parameters/4/name",
            "cannot set the 'Authorization' header",
        ),
        (
            lambda d: _tool0(d)["request"]["parameters"][4].update(name="host"),
            "/tools/0/request/parameters/4/name",
            "cannot set the 'host' header",
        ),
        (
            lambda d: _tool0(d)["request"]["parameters"][4].update(name="X-Bad\r\nName"),
            "/tools/0/request/parameters/4/name",
            "not a valid header name",
        ),
        (
            lambda d: _tool0(d)["request"]["parameters"][1].update(style="deepFried"),
            "/tools/0/request/parameters/1/style",
            "not supported",
        ),
        (
            lambda d: _tool0(d)["inputSchema"]["properties"].pop("limit"),
            "/tools/0/inputSchema/properties",
            "'limit' is used by the request but not declared",
        ),
        (
            lambda d: _tool0(d).update(security=[[{"scheme": "Nope", "scopes": []}]]),
            "/tools/0/security/0/0/scheme",
            "unknown security scheme",
        ),
        (
            lambda d: d["securitySchemes"]["ApiKey"].update(name="Cookie"),
            "/securitySchemes/ApiKey/name",
            "cannot be sent as",
        ),
        (
            lambda d: d["upstream"].update(timeoutSeconds=0),
            "/upstream/timeoutSeconds",
            "positive",
        ),
        (
            lambda d: _tool0(d).update(output={"wrap": "items"}),
            "/tools/0/output/wrap",
            "unsupported wrap",
        ),
    ],
)
def test_bad_catalogs_are_refused_with_a_pointer(
    mutate: Mutation, pointer: str, message: str
) -> None:
    data = catalog_data()
    mutate(data)
    with pytest.raises(CatalogError) as info:
        load_catalog(data)
    assert info.value.pointer == pointer
    assert message in info.value.message


def test_G17_a_parameter_cannot_share_the_wire_name_of_an_api_key() -> None:
    data = one_tool_catalog([param("key", "api_key", "query")], {"key": {"type": "string"}})
    data["tools"][0]["security"] = [[{"scheme": "QueryKey", "scopes": []}]]
    with pytest.raises(CatalogError, match="clash with the credential"):
        load_catalog(data)
    data = one_tool_catalog([param("key", "x-api-key", "header")], {"key": {"type": "string"}})
    data["tools"][0]["security"] = [[{"scheme": "ApiKey", "scopes": []}]]
    with pytest.raises(CatalogError, match="clash with the credential"):
        load_catalog(data)


def test_unsupported_body_media_types_are_refused() -> None:
    body = {"mediaType": "not a media type", "required": True, "argument": "b", "properties": {}}
    data = one_tool_catalog([], {"b": {}}, method="POST", body=body)
    with pytest.raises(CatalogError, match="unsupported request media type"):
        load_catalog(data)


def test_an_api_key_may_be_sent_as_the_authorization_header() -> None:
    data = catalog_data()
    data["securitySchemes"]["ApiKey"].update(name="Authorization")
    scheme = load_catalog(data).security_schemes["ApiKey"]
    assert scheme.param_name == "Authorization"
