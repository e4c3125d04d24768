"""G16 at run time: server URL variables are operator settings, and only from their enum."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from runtime_support import ENV, Recorder, catalog_data

from mcpmint.runtime.catalog import Catalog, CatalogError, load_catalog
from mcpmint.runtime.server import build_server
from mcpmint.runtime.upstream import UpstreamError, resolve_base_url

pytestmark = pytest.mark.anyio

LIST = ("pets_get_pet", {"petId": "1"})


def geo_catalog(**variables: dict[str, Any]) -> Catalog:
    data = catalog_data()
    template = "https://{region}.api.example.com/{version}"
    data["upstream"] = {
        "baseUrl": "https://eu.api.example.com/v1",
        "timeoutSeconds": 5.0,
        "urlTemplate": template,
        "variables": {
            "region": {"default": "eu", "enum": ["eu", "us"]},
            "version": {"default": "v1"},
            **variables,
        },
    }
    if "host" in variables:
        data["upstream"]["urlTemplate"] = "https://{host}/{version}"
        del data["upstream"]["variables"]["region"]
    return load_catalog(data)


async def call(catalog: Catalog, upstream: Recorder, env: dict[str, str], **args: Any) -> Any:
    server = build_server(catalog, transport=upstream.transport, environ={**ENV, **env})
    async with Client(server) as client:
        return await client.call_tool(LIST[0], {**LIST[1], **args})


def text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def test_G16_the_default_and_an_enum_value_from_the_environment_are_used(
    upstream: Recorder,
) -> None:
    catalog = geo_catalog()
    assert not (await call(catalog, upstream, {})).is_error
    assert not (await call(catalog, upstream, {"PETS_SERVER_REGION": "us"})).is_error
    assert [r.url.host for r in upstream.requests] == ["eu.api.example.com", "us.api.example.com"]
    assert upstream.last.url.path == "/v1/pets/1"


@pytest.mark.parametrize("value", ["ap", "evil.example.com", "EU", "eu.evil.com"])
async def test_G16_a_server_variable_outside_its_enum_is_refused_and_nothing_sent(
    upstream: Recorder, value: str
) -> None:
    result = await call(geo_catalog(), upstream, {"PETS_SERVER_REGION": value})
    assert result.is_error
    assert "server variable 'region' (PETS_SERVER_REGION) must be one of: eu, us" in text(result)
    assert "No request was sent" in text(result)
    assert upstream.requests == []


async def test_G16_a_default_outside_the_enum_is_refused(upstream: Recorder) -> None:
    catalog = geo_catalog(region={"default": "ap", "enum": ["eu", "us"]})
    result = await call(catalog, upstream, {})
    assert result.is_error and "(the spec's default) must be one of: eu, us" in text(result)
    assert upstream.requests == []


async def test_G16_a_model_cannot_set_a_server_variable(upstream: Recorder) -> None:
    # Variables are not arguments: the strict input schema refuses them.
    for extra in ({"region": "us"}, {"host": "evil.com"}, {"PETS_SERVER_REGION": "us"}):
        result = await call(geo_catalog(), upstream, {}, **extra)
        assert result.is_error and "Invalid arguments" in text(result)
    assert upstream.requests == []


@pytest.mark.parametrize(
    "value", ["evil.com@api.example.com", "api.example.com?x=", "a#b", "a b", "a%2fb", "a\\b"]
)
async def test_G16_a_free_form_host_takes_no_value_that_restructures_the_url(
    upstream: Recorder, value: str
) -> None:
    catalog = geo_catalog(host={"default": "api.example.com"})
    result = await call(catalog, upstream, {"PETS_SERVER_HOST": value})
    assert result.is_error and "may hold only letters, digits" in text(result)
    assert upstream.requests == []


async def test_G16_the_operator_sets_a_free_form_host_and_base_url_wins(
    upstream: Recorder,
) -> None:
    catalog = geo_catalog(host={"default": "api.example.com"})
    await call(catalog, upstream, {"PETS_SERVER_HOST": "staging.example.com"})
    await call(
        catalog,
        upstream,
        {"PETS_SERVER_HOST": "x.example.com", "PETS_BASE_URL": "https://other.example.org/v9"},
    )
    assert [str(r.url) for r in upstream.requests] == [
        "https://staging.example.com/v1/pets/1",
        "https://other.example.org/v9/pets/1",
    ]


def test_G16_resolve_base_url_names_the_variable() -> None:
    with pytest.raises(UpstreamError, match="PETS_SERVER_REGION"):
        resolve_base_url(geo_catalog(), {"PETS_SERVER_REGION": "mars"})
    assert resolve_base_url(geo_catalog(), {}) == "https://eu.api.example.com/v1"


def test_a_template_whose_placeholders_do_not_match_its_variables_is_refused() -> None:
    data = catalog_data()
    data["upstream"]["urlTemplate"] = "https://{region}.example.com"
    with pytest.raises(CatalogError, match="/upstream/urlTemplate"):
        load_catalog(data)


# --- an operation's own servers (OpenAPI's operation and path item `servers`) -------------


def own_server_catalog(server: str) -> Catalog:
    data = catalog_data()
    for tool in data["tools"]:
        if tool["name"] == LIST[0]:
            tool["request"]["server"] = server
    return load_catalog(data)


@pytest.mark.parametrize(
    ("server", "env", "url"),
    [
        ("https://uploads.example.com/u", {}, "https://uploads.example.com/u/pets/1"),
        ("/internal", {}, "https://api.example.com/internal/pets/1"),  # RFC 3986, from /v1
        ("v2", {}, "https://api.example.com/v2/pets/1"),
        # The operator's base URL wins over a host the spec names; a relative one follows it.
        (
            "https://uploads.example.com/u",
            {"PETS_BASE_URL": "http://127.0.0.1:9/mock"},
            "http://127.0.0.1:9/mock/pets/1",
        ),
        (
            "/internal",
            {"PETS_BASE_URL": "http://127.0.0.1:9/mock"},
            "http://127.0.0.1:9/internal/pets/1",
        ),
        ("//uploads.example.com/u", {}, "https://uploads.example.com/u/pets/1"),
        (
            "//uploads.example.com/u",
            {"PETS_BASE_URL": "http://127.0.0.1:9/mock"},
            "http://127.0.0.1:9/mock/pets/1",
        ),
    ],
)
async def test_an_operation_with_its_own_server_sends_there(
    upstream: Recorder, server: str, env: dict[str, str], url: str
) -> None:
    result = await call(own_server_catalog(server), upstream, env)
    assert not result.is_error, text(result)
    assert str(upstream.last.url).split("?")[0] == url


@pytest.mark.parametrize(
    "server", ["ftp://files.example.com", "https://user@evil.example.com", "/x?y=1", "/x#f", 7]
)
def test_an_unusable_operation_server_is_refused_by_the_catalog(server: Any) -> None:
    with pytest.raises(CatalogError, match="server"):
        own_server_catalog(server)
