"""OpenAPI's parameter styles end to end: specs/styles.yaml (every style in every location,
exploded and not) through the generator and the runtime to requests that an implementation
of OpenAPI independent of mcpmint accepts, and that it refuses when built the other way.

The requests are the golden package's recorded ones (tests/golden/styles), which its own
generated tests check the runtime sends; the judge is that package's generated oracle
(`tests/spec_oracle.py`: openapi-core reading the shipped spec), and, in the slow tier, a Prism
mock of the same spec.
"""

from __future__ import annotations

import importlib.util
import json
from types import ModuleType
from typing import Any

import httpx2
import pytest

from .support import prism
from .test_golden import GOLDEN, GOLDEN_SPECS

PACKAGE = GOLDEN / "styles"
CASES: dict[str, Any] = json.loads(
    (PACKAGE / "tests" / "generated_cases.json").read_text(encoding="utf-8")
)
BASE = "http://127.0.0.1:8766/base"


def load_oracle() -> ModuleType:
    """The golden package's generated `tests/spec_oracle.py`, as its tests import it."""
    found = importlib.util.spec_from_file_location(
        "styles_spec_oracle", PACKAGE / "tests" / "spec_oracle.py"
    )
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


ORACLE = load_oracle()


def request(
    name: str, url: str | None = None, base: str = BASE, **headers: str | None
) -> httpx2.Request:
    """The request recorded for tool `name`; with another URL (after the base), another
    base URL, or headers."""
    recorded = CASES["calls"][name]["request"]
    sent = {**recorded["headers"], **{k.replace("_", "-"): v for k, v in headers.items()}}
    return httpx2.Request(
        recorded["method"],
        base + (url if url is not None else recorded["url"].removeprefix(BASE)),
        headers={k: v for k, v in sent.items() if v is not None},
        content=recorded["body"].encode("utf-8") or None,
    )


def judge(name: str, sent: httpx2.Request) -> list[str]:
    case = CASES["calls"][name]
    problems: list[str] = ORACLE.judge(sent, case["upstream"], case["operation"], case["arguments"])
    return problems


def test_the_styles_golden_calls_every_operation_of_the_spec() -> None:
    assert GOLDEN_SPECS["styles"].name == "styles.yaml"
    assert sorted(CASES["calls"]) == [
        "styles_cookie_form",
        "styles_header_simple",
        "styles_path_label",
        "styles_path_matrix",
        "styles_path_simple",
        "styles_query_deep",
        "styles_query_delimited",
        "styles_query_delimited_objects",
        "styles_query_form",
    ]


@pytest.mark.parametrize("name", sorted(CASES["calls"]))
def test_the_request_each_tool_sends_is_one_the_spec_accepts(name: str) -> None:
    assert judge(name, request(name)) == []


# Each tool's request built another way: the other explode, another style, another place.
WRONG = [
    ("styles_path_simple", "/simple/blue,black/3,4/g,200,r,100/g,2,r,1/plain", "objX unexploded"),
    ("styles_path_simple", "/simple/blue,black/3,4/g=200,r=100/g=2,r=1/plain", "obj exploded"),
    ("styles_path_label", "/label/.blue.black/.red.green/.g,200,r,100/.g=2.r=1/.5", "arr exploded"),
    ("styles_path_label", "/label/.blue,black/.red,green/.g,200,r,100/.g=2.r=1/.5", "arrX flat"),
    ("styles_path_label", "/label/blue,black/.red.green/.g,200,r,100/.g=2.r=1/.5", "simple"),
    (
        "styles_path_matrix",
        "/matrix/;arr=blue,black/;arrX=red,green/;obj=g,200,r,100/;g=2;r=1/;prim=plain",
        "arrX flat",
    ),
    (
        "styles_path_matrix",
        "/matrix/;arr=blue;arr=black/;arrX=red;arrX=green/;obj=g,200,r,100/;g=2;r=1/;prim=plain",
        "arr exploded",
    ),
    (
        "styles_path_matrix",
        "/matrix/;arr=blue,black/;arrX=red;arrX=green/;obj=g,200,r,100/;objX=g,2,r,1/;prim=plain",
        "objX flat",
    ),
    (
        "styles_query_form",
        "/form?arr=blue,black&arrFlat=3,4&g=200&r=100&objFlat=h,4,w,3&prim=true",
        "arr flat",
    ),
    (
        "styles_query_form",
        "/form?arr=blue&arr=black&arrFlat=3&arrFlat=4&g=200&r=100&objFlat=h,4,w,3&prim=true",
        "arrFlat exploded",
    ),
    (
        "styles_query_form",
        "/form?arr=blue&arr=black&arrFlat=3,4&obj=g,200,r,100&objFlat=h,4,w,3&prim=true",
        "obj flat",
    ),
    (
        "styles_query_form",
        "/form?arr=blue&arr=black&arrFlat=3,4&g=200&r=100&h=4&w=3&prim=true",
        "objFlat exploded",
    ),
    (
        "styles_query_delimited",
        "/delimited?piped=3&piped=4&spaced=blue%20black",
        "piped exploded",
    ),
    (
        "styles_query_delimited",
        "/delimited?piped=3|4&spaced=blue,black",
        "spaced as form",
    ),
    (
        "styles_query_delimited_objects",
        "/delimited-objects?pipedObj=h,4,w,3&spacedObj=g%20200%20r%20100",
        "pipedObj as form",
    ),
    (
        "styles_query_delimited_objects",
        "/delimited-objects?pipedObj=h|4|w|3&spacedObj=g=200&spacedObj=r=100",
        "spacedObj exploded",
    ),
    ("styles_query_deep", "/deep?filter=g,200,r,100", "deepObject as form"),
    ("styles_query_deep", "/deep?g=200&r=100", "deepObject as exploded form"),
    (
        "styles_query_form",
        "/form?arr=blue&arr=black&arrFlat=3,4&g=200&r=100&objFlat=h,4,w,3&prim=true&extra=1",
        "a query parameter the spec has not",
    ),
    (
        "styles_path_simple",
        "/label/.blue,black/.3.4/.g,200,r,100/.g=2.r=1/.plain",
        "another operation",
    ),
]


@pytest.mark.parametrize(("name", "url", "why"), WRONG, ids=[f"{n}: {w}" for n, _, w in WRONG])
def test_a_request_built_another_way_is_refused(name: str, url: str, why: str) -> None:
    assert judge(name, request(name, url)) != [], why


WRONG_HEADERS = [
    ("styles_header_simple", {"x_obj_exploded": "g,2,r,1"}, "X-Obj-Exploded unexploded"),
    ("styles_header_simple", {"x_obj": "g=200,r=100"}, "X-Obj exploded"),
    ("styles_header_simple", {"x_arr": "blue"}, "X-Arr cut short"),
    ("styles_header_simple", {"x_prim": None}, "X-Prim left out"),
    ("styles_header_simple", {"x_extra": "1"}, "a header the spec has not"),
    (
        "styles_cookie_form",
        {"cookie": "arr=blue; arr=black; obj=g,200,r,100; prim=plain"},
        "arr exploded",
    ),
    ("styles_cookie_form", {"cookie": "arr=blue,black; obj=g,200,r,100"}, "prim left out"),
    (
        "styles_cookie_form",
        {"cookie": "arr=blue,black; obj=g,200,r,100; prim=plain; x=1"},
        "a cookie the spec has not",
    ),
]


@pytest.mark.parametrize(
    ("name", "headers", "why"), WRONG_HEADERS, ids=[f"{n}: {w}" for n, _, w in WRONG_HEADERS]
)
def test_a_header_or_cookie_built_another_way_is_refused(
    name: str, headers: dict[str, str | None], why: str
) -> None:
    assert judge(name, request(name, **headers)) != [], why


def test_a_header_parameter_sent_in_the_query_is_refused() -> None:
    sent = request("styles_header_simple", "/headers?X-Prim=plain", x_prim=None)
    problems = judge("styles_header_simple", sent)
    assert any("X-Prim" in problem and "header" in problem for problem in problems), problems
    assert "query parameter X-Prim is not in the spec" in problems


def test_a_request_without_the_base_path_is_refused() -> None:
    sent = httpx2.Request(
        "GET", CASES["calls"]["styles_query_deep"]["request"]["url"].replace("/base", "")
    )
    assert judge("styles_query_deep", sent) != []


# What Prism 5 can read: it crashes (the whole mock server) on an array or object in a path
# parameter of any style, and on spaceDelimited and pipeDelimited objects (docs/
# generated-package.md); openapi-core, above, reads those.
PRISM_READS = [
    "styles_cookie_form",
    "styles_header_simple",
    "styles_query_deep",
    "styles_query_delimited",
    "styles_query_form",
]


@pytest.mark.slow
def test_prism_accepts_the_request_each_tool_sends() -> None:
    """Prism, another implementation of OpenAPI, validates the same requests against the
    same spec (a 422 names what it refused)."""
    answers = {}
    with prism(GOLDEN_SPECS["styles"]) as url, httpx2.Client() as client:
        for name in PRISM_READS:
            response = client.send(request(name, base=url))  # Prism serves the paths at /
            answers[name] = (response.status_code, response.text[:300])
    refused = {name: answer for name, answer in answers.items() if answer[0] >= 300}
    assert refused == {}, refused


def test_the_shipped_spec_is_the_spec() -> None:
    shipped = PACKAGE / "tests" / "spec" / "styles.yaml"
    assert shipped.read_text(encoding="utf-8") == GOLDEN_SPECS["styles"].read_text(encoding="utf-8")
