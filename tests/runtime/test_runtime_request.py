"""build_request: OpenAPI serialisation, path safety (S5), query integrity (S8), headers (S7)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from runtime_support import BASE_URL, one_tool_catalog, param

from mcpmint.runtime.catalog import Tool, load_catalog
from mcpmint.runtime.request import ArgumentError, PreparedRequest, build_request

COLOR_STRING = "blue"
COLOR_ARRAY = ["blue", "black", "brown"]
COLOR_OBJECT = {"R": 100, "G": 200, "B": 150}
ANY = {"type": ["string", "array", "object", "integer", "number", "boolean"]}


def tool_with(where: str, style: str, explode: bool, *, name: str = "color") -> Tool:
    path = "/items/{color}" if where == "path" else "/items"
    data = one_tool_catalog(
        [param("color", name, where, style=style, explode=explode)], {"color": ANY}, path=path
    )
    tool = load_catalog(data).tool("t")
    assert tool is not None
    return tool


def build(tool: Tool, arguments: dict[str, Any]) -> PreparedRequest:
    return build_request(tool, arguments, BASE_URL)


def target(request: PreparedRequest) -> str:
    assert request.url.startswith("https://api.example.com/v1/")
    return request.url.removeprefix("https://api.example.com")


# The examples of OpenAPI 3.1.1's style table (section 4.8.12.4.1), for color = "blue",
# ["blue", "black", "brown"] and {"R": 100, "G": 200, "B": 150}.
QUERY_TABLE = [
    ("form", False, COLOR_STRING, "color=blue"),
    ("form", False, COLOR_ARRAY, "color=blue,black,brown"),
    ("form", False, COLOR_OBJECT, "color=R,100,G,200,B,150"),
    ("form", True, COLOR_STRING, "color=blue"),
    ("form", True, COLOR_ARRAY, "color=blue&color=black&color=brown"),
    ("form", True, COLOR_OBJECT, "R=100&G=200&B=150"),
    ("form", True, "", "color="),
    ("spaceDelimited", False, COLOR_ARRAY, "color=blue%20black%20brown"),
    ("spaceDelimited", False, COLOR_OBJECT, "color=R%20100%20G%20200%20B%20150"),
    ("pipeDelimited", False, COLOR_ARRAY, "color=blue|black|brown"),
    ("pipeDelimited", False, COLOR_OBJECT, "color=R|100|G|200|B|150"),
    ("deepObject", True, COLOR_OBJECT, "color[R]=100&color[G]=200&color[B]=150"),
    # explode=true on the delimited styles is form's explode (OpenAPI 3.1.1).
    ("spaceDelimited", True, COLOR_ARRAY, "color=blue&color=black&color=brown"),
    ("pipeDelimited", True, COLOR_ARRAY, "color=blue&color=black&color=brown"),
]

PATH_TABLE = [
    ("simple", False, COLOR_STRING, "blue"),
    ("simple", False, COLOR_ARRAY, "blue,black,brown"),
    ("simple", False, COLOR_OBJECT, "R,100,G,200,B,150"),
    ("simple", True, COLOR_ARRAY, "blue,black,brown"),
    ("simple", True, COLOR_OBJECT, "R=100,G=200,B=150"),
    ("label", False, COLOR_STRING, ".blue"),
    ("label", False, COLOR_ARRAY, ".blue,black,brown"),
    ("label", False, COLOR_OBJECT, ".R,100,G,200,B,150"),
    ("label", True, COLOR_ARRAY, ".blue.black.brown"),
    ("label", True, COLOR_OBJECT, ".R=100.G=200.B=150"),
    ("matrix", False, COLOR_STRING, ";color=blue"),
    ("matrix", False, COLOR_ARRAY, ";color=blue,black,brown"),
    ("matrix", False, COLOR_OBJECT, ";color=R,100,G,200,B,150"),
    ("matrix", True, COLOR_ARRAY, ";color=blue;color=black;color=brown"),
    ("matrix", True, COLOR_OBJECT, ";R=100;G=200;B=150"),
]

HEADER_TABLE = [
    (False, COLOR_STRING, "blue"),
    (False, COLOR_ARRAY, "blue,black,brown"),
    (False, COLOR_OBJECT, "R,100,G,200,B,150"),
    (True, COLOR_OBJECT, "R=100,G=200,B=150"),
]


@pytest.mark.parametrize(("style", "explode", "value", "query"), QUERY_TABLE)
def test_query_styles_follow_the_openapi_table(
    style: str, explode: bool, value: object, query: str
) -> None:
    request = build(tool_with("query", style, explode), {"color": value})
    assert target(request) == f"/v1/items?{query}"


@pytest.mark.parametrize(("style", "explode", "value", "segment"), PATH_TABLE)
def test_path_styles_follow_the_openapi_table(
    style: str, explode: bool, value: object, segment: str
) -> None:
    request = build(tool_with("path", style, explode), {"color": value})
    assert target(request) == f"/v1/items/{segment}"


@pytest.mark.parametrize(("explode", "value", "header"), HEADER_TABLE)
def test_header_simple_style_follows_the_openapi_table(
    explode: bool, value: object, header: str
) -> None:
    tool = tool_with("header", "simple", explode, name="X-Color")
    assert ("X-Color", header) in build(tool, {"color": value}).headers


@pytest.mark.parametrize(
    ("value", "query"),
    [
        (True, "color=true"),
        (False, "color=false"),
        (10, "color=10"),
        (1.5, "color=1.5"),
        (1e20, "color=1e%2B20"),
        ("a b+c", "color=a%20b%2Bc"),
        ("é/?#[]", "color=%C3%A9%2F%3F%23%5B%5D"),
        ([True, 2], "color=true&color=2"),
        ({"a b": "c&d"}, "a%20b=c%26d"),
    ],
)
def test_query_values_are_json_spelled_and_percent_encoded(value: object, query: str) -> None:
    assert target(build(tool_with("query", "form", True), {"color": value})) == f"/v1/items?{query}"


def test_deep_object_nests_brackets_and_encodes_keys() -> None:
    tool = tool_with("query", "deepObject", True)
    request = build(tool, {"color": {"a": {"b": 1}, "c d": [1, 2], "e": None}})
    assert target(request) == "/v1/items?color[a][b]=1&color[c%20d]=1&color[c%20d]=2"


def test_S8_ampersand_and_equals_cannot_add_query_parameters() -> None:
    tool = tool_with("query", "form", True, name="q")
    assert target(build(tool, {"color": "a&admin=true"})) == "/v1/items?q=a%26admin%3Dtrue"
    assert target(build(tool, {"color": ["x&y=1", "z"]})) == "/v1/items?q=x%26y%3D1&q=z"


def test_optional_parameters_that_are_absent_or_null_are_left_out() -> None:
    tool = tool_with("query", "form", True)
    assert target(build(tool, {})) == "/v1/items"
    assert target(build(tool, {"color": None})) == "/v1/items"


# ------------------------------------------------------------------------------------ S5

S5_REJECTED = ["../../admin", "..", ".", "%2e%2e", "%2E%2e", "%252e%252e", "\\..\\", "a/../b", ""]
S5_ENCODED = {
    "a/b": "a%2Fb",
    "a%2Fb": "a%252Fb",
    "a?x=1": "a%3Fx%3D1",
    "a#f": "a%23f",
    "//evil.com/x": "%2F%2Fevil.com%2Fx",
    "http://169.254.169.254/latest": "http%3A%2F%2F169.254.169.254%2Flatest",
    "...": "...",
    ".hidden": ".hidden",
    "a b;c=d": "a%20b%3Bc%3Dd",
}


@pytest.mark.parametrize("value", S5_REJECTED)
def test_S5_dot_segments_and_traversal_are_refused(value: str) -> None:
    tool = tool_with("path", "simple", False)
    with pytest.raises(ArgumentError) as info:
        build(tool, {"color": value})
    assert info.value.argument == "color"


@pytest.mark.parametrize(("value", "segment"), sorted(S5_ENCODED.items()))
def test_S5_other_values_are_one_encoded_segment(value: str, segment: str) -> None:
    request = build(tool_with("path", "simple", False), {"color": value})
    assert request.url == f"https://api.example.com/v1/items/{segment}"


@pytest.mark.parametrize("style", ["simple", "label", "matrix"])
def test_S5_dot_items_are_refused_in_every_path_style(style: str) -> None:
    with pytest.raises(ArgumentError):
        build(tool_with("path", style, True), {"color": ["a", ".."]})
    with pytest.raises(ArgumentError):
        build(tool_with("path", style, True), {"color": []})


# ------------------------------------------------------------------------------------ S7


@pytest.mark.parametrize("value", ["v\r\nX-Injected: 1", "v\nX", "v\rX", "v\x00", "v\x7f", "é"])
def test_S7_header_values_with_control_characters_are_refused(value: str) -> None:
    tool = tool_with("header", "simple", False, name="X-Color")
    with pytest.raises(ArgumentError) as info:
        build(tool, {"color": value})
    assert info.value.argument == "color"
    if value[1:2] in ("\r", "\n", "\x00"):
        assert "CR, LF or NUL" in info.value.message


def test_S7_cookie_values_with_line_breaks_are_refused_and_others_encoded() -> None:
    tool = tool_with("cookie", "form", True, name="pref")
    with pytest.raises(ArgumentError):
        build(tool, {"color": "a\r\nSet-Cookie: x=1"})
    assert ("Cookie", "pref=a%3B%20b%3Dc") in build(tool, {"color": "a; b=c"}).headers


# ------------------------------------------------------------------------------------ bodies


def body_tool(body: dict[str, Any], properties: dict[str, Any]) -> Tool:
    data = one_tool_catalog([], properties, method="POST", body=body)
    tool = load_catalog(data).tool("t")
    assert tool is not None
    return tool


def test_flattened_json_body_uses_wire_names_and_keeps_null() -> None:
    tool = body_tool(
        {
            "mediaType": "application/json",
            "required": True,
            "argument": None,
            "properties": {"name": "name", "body_id": "id", "tag": "tag"},
        },
        {"name": {}, "body_id": {}, "tag": {}},
    )
    request = build(tool, {"name": "Rex", "body_id": 7, "tag": None})
    assert request.body == b'{"name":"Rex","id":7,"tag":null}'
    assert request.headers == (("Accept", "application/json"), ("Content-Type", "application/json"))
    assert build(tool, {}).body == b"{}"


def test_optional_body_absent_sends_no_body() -> None:
    tool = body_tool(
        {"mediaType": "application/json", "required": False, "argument": "body", "properties": {}},
        {"body": {}},
    )
    assert build(tool, {}).body is None
    assert build(tool, {"body": [1, "é"]}).body == '[1,"é"]'.encode()


def test_form_and_text_bodies() -> None:
    form = body_tool(
        {
            "mediaType": "application/x-www-form-urlencoded",
            "required": True,
            "argument": None,
            "properties": {"a": "a", "b": "b c"},
        },
        {"a": {}, "b": {}},
    )
    assert build(form, {"a": "x&y", "b": [1, 2]}).body == b"a=x%26y&b%20c=1&b%20c=2"
    text = body_tool(
        {"mediaType": "text/plain", "required": True, "argument": "body", "properties": {}},
        {"body": {}},
    )
    assert build(text, {"body": "héllo"}).body == "héllo".encode()
    with pytest.raises(ArgumentError):
        build(text, {"body": 5})


# ------------------------------------------------------------------------------------ origin


def test_base_url_path_is_kept_and_trailing_slash_dropped() -> None:
    tool = tool_with("query", "form", True)
    request = build_request(tool, {}, "http://127.0.0.1:8765/api/")
    assert request.url == "http://127.0.0.1:8765/api/items"


@pytest.mark.parametrize(
    "base",
    [
        "/relative",
        "ftp://x/",
        "https://user:pw@x/",
        "https://x/?a=1",
        "https://x/#f",
        "https://x/a#",
        "https://x:99999/",
        "x",
    ],
)
def test_unusable_base_urls_are_refused(base: str) -> None:
    with pytest.raises(ValueError, match="base URL"):
        build_request(tool_with("query", "form", True), {}, base)


def test_request_catalog_and_render_modules_do_not_import_mcp() -> None:
    # The generator uses them; mcpmint itself does not depend on the SDK.
    import subprocess
    import sys

    code = (
        "import sys, mcpmint.runtime.request, mcpmint.runtime.catalog, mcpmint.render.templates;"
        "import mcpmint.cli, mcpmint.settings, mcpmint.build.toolmodes;"
        "import mcpmint.build.frontends.manifest;"
        "mcpmint.settings._runtime_problem('TIMEOUT', '5');"
        "assert not any(m == 'mcp' or m.startswith(('mcp.', 'httpx2')) for m in sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("name", ["Host", "authorization", "Transfer-Encoding", "Connection"])
def test_S7_reserved_headers_are_refused_at_request_time_too(name: str) -> None:
    # load_catalog refuses these; a Tool built any other way must not get through either.
    tool = tool_with("header", "simple", False, name="X-Color")
    sneaky = replace(
        tool,
        request=replace(tool.request, parameters=(replace(tool.request.parameters[0], name=name),)),
    )
    with pytest.raises(ArgumentError) as info:
        build(sneaky, {"color": "evil.example"})
    assert info.value.argument == name
