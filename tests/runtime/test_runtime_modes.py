"""Tool modes (dynamic, groups), the search index and concise results, in the runtime.

Every call goes through the SDK's in-memory client against a recording upstream; a call made
through `pets_call_tool` is compared with the same call made directly.
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from runtime_support import ENV, Answer, Recorder, catalog_data

from mcpmint.runtime.audit import AuditLog
from mcpmint.runtime.catalog import Catalog, CatalogError, load_catalog
from mcpmint.runtime.modes import ToolRouter, _one_line, fit_schema, meta_tool_definitions
from mcpmint.runtime.projection import Projection, project, take_format
from mcpmint.runtime.search import (
    _NAME_WEIGHT,
    Document,
    SearchIndex,
    query_terms,
    terms,
)
from mcpmint.runtime.server import ConfigurationError, build_server

pytestmark = pytest.mark.anyio

META = ["pets_search_tools", "pets_describe_tool", "pets_call_tool"]
# The test catalog's output schema requires id and name: a projection must keep them.
CONCISE = {"fields": ["id", "name"], "maxItems": 2, "default": "detailed"}


def modes_catalog(**modes: Any) -> Catalog:
    data = catalog_data()
    data["toolModes"] = modes
    return load_catalog(data)


DYNAMIC = {"mode": "dynamic", "core": ["pets_list_pets"], "tags": {"pets_stats": ["admin"]}}


@asynccontextmanager
async def connect(
    catalog: Catalog,
    upstream: Recorder,
    mode: str = "auto",
    env: dict[str, str] | None = None,
    answer: Answer | None = None,
    audit: io.StringIO | None = None,
) -> AsyncIterator[Client]:
    server = build_server(
        catalog,
        transport=upstream.transport,
        environ=ENV if env is None else env,
        audit=AuditLog(stream=audit or io.StringIO()),
    )
    async with Client(server, mode=mode, elicitation_callback=answer) as client:
        yield client


def text(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def listed(client: Client) -> list[str]:
    return [tool.name for tool in (await client.list_tools()).tools]


# ---------------------------------------------------------------------- dynamic mode
async def test_dynamic_mode_lists_its_three_tools_and_the_core_ones(
    upstream: Recorder, mode: str
) -> None:
    async with connect(modes_catalog(**DYNAMIC), upstream, mode) as client:
        tools = (await client.list_tools()).tools
    assert [tool.name for tool in tools] == [*META, "pets_list_pets"]
    dumped = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools[:3]]
    assert dumped == meta_tool_definitions("pets", "Pets")


async def test_search_tools_finds_a_tool_by_plain_words_and_never_a_hidden_one(
    upstream: Recorder,
) -> None:
    env = {**ENV, "PETS_TOOLS_DENY": "pets_delete_pet"}
    async with connect(modes_catalog(**DYNAMIC), upstream, env=env) as client:
        found = await client.call_tool("pets_search_tools", {"query": "create a new pet"})
        deleted = await client.call_tool("pets_search_tools", {"query": "delete pet", "limit": 25})
        admin = await client.call_tool("pets_search_tools", {"query": "admin statistics"})
    assert found.structured_content is not None
    assert found.structured_content["tools"][0]["name"] == "pets_create_pet"
    assert json.loads(text(found)) == found.structured_content
    assert deleted.structured_content is not None
    names = [t["name"] for t in deleted.structured_content["tools"]]
    assert "pets_delete_pet" not in names
    assert admin.structured_content is not None
    assert admin.structured_content["tools"][0]["name"] == "pets_stats"  # by its tag
    assert upstream.requests == []


async def test_describe_tool_gives_the_schemas_and_refuses_a_hidden_tool(
    upstream: Recorder,
) -> None:
    env = {**ENV, "PETS_TOOLS_DENY": "pets_delete_pet"}
    async with connect(modes_catalog(**DYNAMIC), upstream, env=env) as client:
        described = await client.call_tool("pets_describe_tool", {"name": "pets_create_pet"})
        with_output = await client.call_tool(
            "pets_describe_tool", {"name": "pets_create_pet", "outputSchema": True}
        )
        hidden = await client.call_tool("pets_describe_tool", {"name": "pets_delete_pet"})
    catalog = modes_catalog(**DYNAMIC)
    create = catalog.tool("pets_create_pet")
    assert create is not None and create.output_schema is not None
    answer = described.structured_content
    assert answer is not None and with_output.structured_content is not None
    assert answer["inputSchema"] == create.input_schema
    # The output schema only on request (it is most of an answer's bytes on real APIs).
    assert "outputSchema" not in answer and '"outputSchema": true' in answer["more"]
    assert with_output.structured_content["outputSchema"] == create.output_schema
    assert answer["asksForConfirmation"] is True
    # No example and a required argument: no made-up call, only how to call.
    assert "exampleCall" not in answer and answer["call"].startswith("pets_call_tool with")
    assert hidden.is_error and "Unknown tool: pets_delete_pet" in text(hidden)


async def test_call_tool_sends_exactly_what_a_direct_call_sends(
    upstream: Recorder, mode: str
) -> None:
    arguments = {"petId": "7", "limit": 3, "q": "a b", "x_request_id": "r1"}
    async with connect(modes_catalog(**DYNAMIC), upstream, mode) as client:
        direct = await client.call_tool("pets_get_pet", arguments)
        routed = await client.call_tool(
            "pets_call_tool", {"name": "pets_get_pet", "arguments": arguments}
        )
    first, second = upstream.requests
    assert (first.method, str(first.url), first.headers.get("X-Request-Id")) == (
        second.method,
        str(second.url),
        second.headers.get("X-Request-Id"),
    )
    assert routed.structured_content == direct.structured_content == {"id": 1, "name": "Rex"}


@pytest.mark.parametrize(
    ("name", "arguments", "env"),
    [
        ("pets_get_pet", {"petId": "7", "limit": "three"}, {}),  # invalid argument
        ("pets_get_pet", {"petId": "7", "surprise": 1}, {}),  # unknown argument
        ("pets_get_pet", {"petId": "8"}, {"PETS_ALLOW_PETS_GET_PET_PETID": "7"}),  # value
    ],
)
async def test_call_tool_refuses_a_bad_call_exactly_as_a_listed_tool_does(
    upstream: Recorder, mode: str, name: str, arguments: dict[str, Any], env: dict[str, str]
) -> None:
    audit = io.StringIO()
    async with connect(
        modes_catalog(**DYNAMIC), upstream, mode, env={**ENV, **env}, audit=audit
    ) as client:
        direct = await client.call_tool(name, arguments)
        routed = await client.call_tool("pets_call_tool", {"name": name, "arguments": arguments})
    assert direct.is_error and routed.is_error
    assert text(routed) == text(direct)
    assert "Nothing was sent" in text(routed) or "nothing was sent" in text(routed)
    assert upstream.requests == []
    records = [json.loads(line) for line in audit.getvalue().splitlines()]
    assert [(r["tool"], r["decision"]) for r in records] == [(name, "refused")] * 2


async def test_call_tool_of_a_hidden_tool_is_an_unknown_tool_as_a_direct_call_is(
    upstream: Recorder, mode: str
) -> None:
    env = {**ENV, "PETS_TOOLS_DENY": "pets_delete_pet"}
    audit = io.StringIO()
    async with connect(modes_catalog(**DYNAMIC), upstream, mode, env=env, audit=audit) as client:
        with pytest.raises(MCPError) as direct:
            await client.call_tool("pets_delete_pet", {"petId": "1"})
        with pytest.raises(MCPError) as routed:
            await client.call_tool(
                "pets_call_tool", {"name": "pets_delete_pet", "arguments": {"petId": "1"}}
            )
    assert routed.value.error.code == direct.value.error.code == types.INVALID_PARAMS
    assert routed.value.error.message == direct.value.error.message
    assert upstream.requests == []
    reasons = [json.loads(line)["reason"] for line in audit.getvalue().splitlines()]
    assert reasons == ["unknown tool", "unknown tool"]


async def test_call_tool_of_a_write_asks_the_user_and_sends_only_after_yes(
    upstream: Recorder, mode: str
) -> None:
    answer = Answer()
    call = {"name": "pets_delete_pet", "arguments": {"petId": "5"}}
    async with connect(modes_catalog(**DYNAMIC), upstream, mode, answer=answer) as client:
        result = await client.call_tool("pets_call_tool", call)
    assert not result.is_error, text(result)
    [message] = answer.messages
    assert message.startswith("Confirm pets_delete_pet")
    assert "DELETE https://api.example.com/v1/pets/5" in message
    assert [(r.method, r.url.path) for r in upstream.requests] == [("DELETE", "/v1/pets/5")]


async def test_call_tool_of_a_write_is_refused_when_the_user_says_no(
    upstream: Recorder, mode: str
) -> None:
    answer = Answer(action="decline")
    call = {"name": "pets_create_pet", "arguments": {"name": "Rex"}}
    async with connect(modes_catalog(**DYNAMIC), upstream, mode, answer=answer) as client:
        result = await client.call_tool("pets_call_tool", call)
    assert result.is_error and "declined by the user" in text(result)
    assert upstream.requests == []


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"name": 5},
        {"name": "pets_get_pet", "arguments": [1]},
        {"name": "pets_call_tool", "arguments": {}},
        {"name": "pets_get_pet", "arguments": {}, "extra": True},
    ],
)
async def test_call_tool_with_malformed_arguments_is_an_error_result(
    upstream: Recorder, arguments: dict[str, Any]
) -> None:
    async with connect(modes_catalog(**DYNAMIC), upstream) as client:
        result = await client.call_tool("pets_call_tool", arguments)
    assert result.is_error
    assert upstream.requests == []


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("pets_search_tools", {}),
        ("pets_search_tools", {"query": ""}),
        ("pets_search_tools", {"query": "pets", "limit": "all"}),
        ("pets_search_tools", {"query": "pets", "verbose": True}),
        ("pets_describe_tool", {"name": 3}),
        ("pets_describe_tool", {"name": "pets_get_pet", "full": True}),
        ("pets_describe_tool", {"name": "pets_get_pet", "outputSchema": "yes"}),
    ],
)
async def test_search_and_describe_refuse_malformed_arguments(
    upstream: Recorder, name: str, arguments: dict[str, Any]
) -> None:
    async with connect(modes_catalog(**DYNAMIC), upstream) as client:
        result = await client.call_tool(name, arguments)
    assert result.is_error and result.structured_content is None


async def test_an_unlisted_tool_can_still_be_called_by_name_in_dynamic_mode(
    upstream: Recorder,
) -> None:
    async with connect(modes_catalog(**DYNAMIC), upstream) as client:
        result = await client.call_tool("pets_get_pet", {"petId": "1"})
    assert not result.is_error
    assert len(upstream.requests) == 1


# ---------------------------------------------------------------------- groups mode
GROUPS = {
    "mode": "groups",
    "core": ["pets_list_pets"],
    "groups": {"read": ["pets_get_pet", "pets_stats"], "write": ["pets_create_pet"]},
    "listedGroups": ["read"],
}


async def test_groups_mode_lists_the_listed_groups_and_the_core_tools(
    upstream: Recorder,
) -> None:
    async with connect(modes_catalog(**GROUPS), upstream) as client:
        names = await listed(client)
    assert names == ["pets_get_pet", "pets_list_pets", "pets_stats"]


async def test_the_groups_variable_overrides_the_configured_choice(upstream: Recorder) -> None:
    env = {**ENV, "PETS_TOOL_GROUPS": "write"}
    async with connect(modes_catalog(**GROUPS), upstream, env=env) as client:
        names = await listed(client)
    assert names == ["pets_create_pet", "pets_list_pets"]


async def test_the_allowlist_still_hides_tools_of_a_listed_group(upstream: Recorder) -> None:
    env = {**ENV, "PETS_TOOLS_DENY": "pets_stats"}
    async with connect(modes_catalog(**GROUPS), upstream, env=env) as client:
        names = await listed(client)
    assert names == ["pets_get_pet", "pets_list_pets"]


def test_an_unknown_group_in_the_variable_is_a_configuration_error() -> None:
    env = {**ENV, "PETS_TOOL_GROUPS": "read,nope"}
    with pytest.raises(ConfigurationError, match="PETS_TOOL_GROUPS names an unknown group 'nope'"):
        build_server(modes_catalog(**GROUPS), environ=env)


@pytest.mark.parametrize(
    ("modes", "pointer"),
    [
        ({"mode": "sometimes"}, "/toolModes/mode"),
        ({"core": ["pets_nope"]}, "/toolModes/core"),
        ({"groups": {"g": ["pets_nope"]}}, "/toolModes/groups/g"),
        ({"groups": {}, "listedGroups": ["g"]}, "/toolModes/listedGroups"),
        ({"responseFormat": {"pets_nope": CONCISE}}, "/toolModes/responseFormat/pets_nope"),
        ({"responseFormat": {"pets_get_pet": {"maxItems": 0}}}, "/toolModes/responseFormat/"),
    ],
)
def test_a_malformed_tool_modes_section_is_a_catalog_error_at_its_pointer(
    modes: dict[str, Any], pointer: str
) -> None:
    data = catalog_data()
    data["toolModes"] = modes
    with pytest.raises(CatalogError) as info:
        load_catalog(data)
    assert info.value.pointer.startswith(pointer)


# ---------------------------------------------------------------------- concise results
def concise_catalog(**projection: Any) -> Catalog:
    data = catalog_data()
    for tool in data["tools"]:
        if tool["name"] == "pets_list_pets":
            tool["inputSchema"]["properties"]["response_format"] = {
                "type": "string",
                "enum": ["concise", "detailed"],
            }
    data["toolModes"] = {"responseFormat": {"pets_list_pets": {**CONCISE, **projection}}}
    return load_catalog(data)


PETS = [{"id": n, "name": f"pet{n}"} for n in range(5)]


async def test_a_concise_result_keeps_the_fields_caps_arrays_and_says_what_was_left_out(
    upstream: Recorder, mode: str
) -> None:
    upstream.respond = lambda request: httpx2.Response(200, json=PETS)
    catalog = concise_catalog(fields=["id", "name"])
    async with connect(catalog, upstream, mode) as client:
        result = await client.call_tool(
            "pets_list_pets", {"limit": 5, "response_format": "concise"}
        )
    assert not result.is_error, text(result)
    assert result.structured_content == {"result": PETS[:2]}
    body, note = text(result).split("\n\n", 1)
    assert json.loads(body) == result.structured_content
    assert "arrays are cut to 2 items (3 items left out)" in note
    assert 'response_format: "detailed"' in note
    # The argument is the server's: it never reaches the upstream API.
    assert upstream.target == "/v1/pets?limit=5&api_key=q%26key%3Ds3cr3t"


async def test_a_detailed_result_is_the_whole_response(upstream: Recorder) -> None:
    upstream.respond = lambda request: httpx2.Response(200, json=PETS)
    async with connect(concise_catalog(), upstream) as client:
        detailed = await client.call_tool("pets_list_pets", {"response_format": "detailed"})
        default = await client.call_tool("pets_list_pets", {})
    assert detailed.structured_content == default.structured_content == {"result": PETS}
    assert "response_format" not in upstream.requests[0].url.query.decode()


async def test_the_configured_default_format_applies_when_the_model_does_not_choose(
    upstream: Recorder,
) -> None:
    upstream.respond = lambda request: httpx2.Response(200, json=PETS)
    async with connect(concise_catalog(default="concise"), upstream) as client:
        result = await client.call_tool("pets_list_pets", {})
    assert result.structured_content == {"result": PETS[:2]}


async def test_a_tool_without_a_projection_refuses_the_argument(upstream: Recorder) -> None:
    async with connect(concise_catalog(), upstream) as client:
        result = await client.call_tool("pets_get_pet", {"petId": "1", "response_format": "x"})
    assert result.is_error and "response_format" in text(result)
    assert upstream.requests == []


def test_projection_keeps_nested_fields_and_counts_what_it_drops() -> None:
    value = {
        "total": 3,
        "items": [
            {"id": 1, "user": {"login": "a", "email": "a@x"}, "body": "long"},
            {"id": 2, "user": {"login": "b", "email": "b@x"}, "body": "long"},
            {"id": 3, "user": {"login": "c"}, "body": "long"},
        ],
    }
    projection = Projection(fields=("total", "items.id", "items.user.login"), max_items=2)
    concise, note = project(value, projection)
    assert concise == {
        "total": 3,
        "items": [{"id": 1, "user": {"login": "a"}}, {"id": 2, "user": {"login": "b"}}],
    }
    assert "1 items left out" in note and "4 left out" in note
    assert project({"total": 1}, projection) == ({"total": 1}, "")


def test_take_format_strips_the_argument_only_for_a_tool_with_a_projection() -> None:
    projection = Projection(fields=(), max_items=3)
    arguments = {"a": 1, "response_format": "concise"}
    assert take_format(arguments, projection) == ({"a": 1}, True, [])
    assert take_format(arguments, None) == (arguments, False, [])
    assert take_format({"a": 1}, Projection((), 3, "concise")) == ({"a": 1}, True, [])
    assert take_format({"response_format": "brief"}, projection)[2] == [
        "response_format: 'brief' is not one of concise, detailed"
    ]


# ---------------------------------------------------------------------- the index
def test_terms_are_stemmed_lower_case_words_without_stop_words() -> None:
    assert terms("List the Issues of a repo") == ["list", "issu", "repository"]
    # Every form of a verb meets the others.
    assert {terms(w)[0] for w in ("create", "creates", "created", "creating")} == {"creat"}
    assert terms("running stopped") == ["run", "stop"]
    assert terms("createdAt pullRequests") == ["creat", "pull", "request"]


def test_describe_gives_the_first_example_as_the_call_to_copy() -> None:
    data = catalog_data()
    data["toolModes"] = DYNAMIC
    (get_pet,) = [t for t in data["tools"] if t["name"] == "pets_get_pet"]
    get_pet["inputSchema"]["examples"] = [{"petId": "7"}, {"petId": "8"}]
    catalog = load_catalog(data)
    router = ToolRouter(catalog, {t.name: t for t in catalog.tools}, {})
    params = types.CallToolRequestParams(
        name="pets_describe_tool", arguments={"name": "pets_get_pet"}
    )
    result = router.route(params)
    assert isinstance(result, types.CallToolResult) and result.structured_content is not None
    assert result.structured_content["exampleCall"] == {
        "name": "pets_call_tool",
        "arguments": {"name": "pets_get_pet", "arguments": {"petId": "7"}},
    }


def test_a_query_drops_values_and_matches_synonyms_once() -> None:
    words = [key for key, _ in query_terms('close issue 1347 of cus_OaR8x1 at 3f9a2b1 "In review"')]
    assert words == ["clos", "issu"]
    addresses = "email jane@example.com the file app.py of nginx:latest on https://x.example"
    assert [key for key, _ in query_terms(addresses)] == ["email", "fil"]
    # "look up the details": one wish said twice counts once, both words exact.
    (look,) = [m for k, m in query_terms("look up details") if not k.startswith("?")]
    assert ("detail", 1.0) in look and ("look", 1.0) in look


def index_of(*tools: tuple[str, str, str]) -> SearchIndex:
    return SearchIndex(
        Document(name, title, "", path=path, namespace="x", method=method)
        for name, title, path in tools
        for method in [name.split("_")[1].upper() if name.count("_") > 1 else "GET"]
    )


def test_the_search_prefers_the_verb_the_object_and_the_narrow_scope_asked_for() -> None:
    index = index_of(
        ("x_delete_branch", "Delete a branch", "/repos/{repo}/branches/{branch}"),
        (
            "x_delete_protection",
            "Delete branch protection",
            "/repos/{repo}/branches/{b}/protection",
        ),
        ("x_get_branch", "Get a branch", "/repos/{repo}/branches/{branch}"),
        ("x_list_alerts", "List alerts for a repository", "/repos/{repo}/alerts"),
        ("x_list_alerts_ent", "List alerts for an enterprise", "/enterprises/{e}/alerts"),
        ("x_post_cancel", "Cancel a run", "/runs/{run}/cancel"),
        ("x_post_rerun", "Re-run a run", "/runs/{run}/rerun"),
    )
    # The object's own tool before a related object's; the verb asked for.
    assert index.search("delete the feature-x branch", 2) == [
        "x_delete_branch",
        "x_delete_protection",
    ]
    # A narrow scope first unless the wide one is asked for.
    assert index.search("list alerts", 1) == ["x_list_alerts"]
    assert index.search("list alerts of the enterprise", 1) == ["x_list_alerts_ent"]
    # Kubernetes' twins share a title; the names say which one spans all namespaces.
    pods = SearchIndex(
        [
            Document("x_list_pod_for_all_namespaces", "List pods", "", path="/api/v1/pods"),
            Document("x_list_namespaced_pod", "List pods", "", path="/api/v1/namespaces/{n}/pods"),
        ]
    )
    assert pods.search("list the pods in namespace web", 1) == ["x_list_namespaced_pod"]
    assert pods.search("list pods in all namespaces", 1) == ["x_list_pod_for_all_namespaces"]
    # A synonym of the verb ("stop" ~ "cancel"); a question asks for a read.
    assert index.search("stop run 9876543210", 1) == ["x_post_cancel"]
    assert index.search("is the branch there", 1) == ["x_get_branch"]


def test_a_tool_word_answers_one_query_word() -> None:
    index = index_of(
        ("x_post_members", "Add a member", "/members"),
        ("x_post_invitations", "Invite a member", "/invitations"),
    )
    # "invite" ~ add and "new" ~ add: one "add" in the title answers one of them, not both.
    assert index.search("invite a new member", 1) == ["x_post_invitations"]


def test_a_plural_asks_for_the_list_and_all_in_a_title_is_no_wide_scope() -> None:
    index = index_of(
        ("x_get_versions", "List all file versions", "/files/{f}/versions"),
        ("x_get_version", "Get file version", "/files/{f}/versions/{v}"),
        ("x_put_incidents", "Update incidents", "/incidents"),
        ("x_put_incident", "Update an incident", "/incidents/{id}"),
    )
    assert index.search("show earlier versions of the spec document", 1) == ["x_get_versions"]
    assert index.search("update the incidents", 1) == ["x_put_incidents"]
    assert index.search("update the incident", 1) == ["x_put_incident"]


def test_logged_in_and_a_path_to_me_mean_the_current_user() -> None:
    index = index_of(
        ("x_get_users_me", "Get current user", "/users/me"),
        ("x_get_audit_logs", "List audit logs", "/audit/logs"),
        ("x_get_user", "Get a user", "/users/{id}"),
    )
    assert index.search("who am I logged in as", 1) == ["x_get_users_me"]


def test_a_verb_after_a_determiner_is_a_state_and_a_name_counts_less() -> None:
    found = dict(query_terms("resolve the open incidents"))
    assert found["open~"] == (("open", 1.0),)  # no synonyms (create, add...), and no verb
    assert "open" not in found
    (maria,) = [m for k, m in query_terms("is Maria online") if k == "maria"]
    assert maria == (("maria", _NAME_WEIGHT),)
    assert [k for k, _ in query_terms("tail the logs of bob's pod")] == [
        "tail",
        "log",
        "bob",
        "pod",
    ]


def test_a_named_word_a_past_tense_and_a_later_step_are_no_verbs() -> None:
    def keys(query: str) -> list[str]:
        return [key for key, _ in query_terms(query)]

    # "into Archive": a name, not the action; "I created": what the task is, not what to do;
    # "before pushing": a later step, which counts less.
    assert keys("move the Drafts folder into Archive") == ["mov", "draft", "folder", "archiv~"]
    assert keys("delete the task I created by mistake") == ["delet", "task", "creat~", "mistak"]
    found = dict(query_terms("give the image a new tag before pushing"))
    assert found["push~"] == (("push", _NAME_WEIGHT),) and "befor" not in found
    # A question that starts with "when" is no clause: its verb is still asked for.
    assert dict(query_terms("when do the nightly builds run"))["run"][0] == ("run", 1.0)
    index = index_of(
        ("x_put_folder", "Update folder", "/folders/{id}"),
        ("x_delete_folder", "Delete folder", "/folders/{id}"),
        ("x_post_push", "Push an image", "/images/{name}/push"),
        ("x_post_tag", "Tag an image", "/images/{name}/tag"),
        ("x_post_sessions", "Create upload session", "/files/upload_sessions"),
        ("x_get_recent", "List recently accessed items", "/recent_items"),
    )
    assert index.search("move the Drafts folder into Archive", 1) == ["x_put_folder"]
    assert index.search("give the image a new tag before pushing", 1) == ["x_post_tag"]
    assert index.search("files I opened recently", 1) == ["x_get_recent"]


def test_mark_asks_for_an_update_and_vat_is_a_tax() -> None:
    (mark,) = [m for k, m in query_terms("mark the node as unschedulable") if k == "mark"]
    assert dict(mark)["updat"] == pytest.approx(0.6)
    (vat,) = [m for k, m in query_terms("add a VAT number") if k == "vat"]
    assert dict(vat)["tax"] == pytest.approx(0.6)


def test_the_method_a_name_starts_with_is_no_word_of_it() -> None:
    # `box_put_groups_id`: a name made of the method and the path; "put" says how, not what.
    index = SearchIndex(
        [
            Document(
                "x_put_groups_id",
                "Update group",
                "",
                path="/groups/{id}",
                namespace="x",
                method="PUT",
            )
        ]
    )
    assert index.search("put", 5) == []
    assert index.search("group", 5) == ["x_put_groups_id"]


def test_every_namespace_asks_for_the_all_namespaces_twin() -> None:
    pods = SearchIndex(
        [
            Document("x_list_pod_for_all_namespaces", "List pods", "", path="/api/v1/pods"),
            Document("x_list_namespaced_pod", "List pods", "", path="/api/v1/namespaces/{n}/pods"),
        ]
    )
    assert pods.search("list the pods in every namespace", 1) == ["x_list_pod_for_all_namespaces"]


def test_a_shortened_names_hash_and_cut_word_are_not_words() -> None:
    index = SearchIndex(
        [
            Document("x_issue_resource_find_us_3045", "Find users", "", namespace="x"),
            Document("x_usage_report", "Get a usage report", "", namespace="x"),
        ]
    )
    assert index.search("us", 5) == []


def test_search_results_add_to_the_title_instead_of_repeating_it() -> None:
    assert _one_line("Get a pet\n\nGet a pet. Returns the pet by its id.", "Get a pet") == (
        "Returns the pet by its id"
    )
    assert _one_line("Get a pet.", "Get a pet") == ""
    long = _one_line("Does " + "many things " * 30, "x")
    assert len(long) <= 160 and long.endswith("…") and long[:-1].split()[-1] in {"many", "things"}


def test_a_huge_input_schema_is_cut_to_the_budget_and_says_so() -> None:
    deep: dict[str, Any] = {"type": "string", "description": "leaf " * 50}
    for level in range(8):
        deep = {"type": "object", "properties": {f"p{level}{i}": deep for i in range(3)}}
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}, "deep": deep},
        "$defs": {"A": {"type": "integer"}, "Unused": {"type": "string", "enum": ["x"] * 50}},
        "examples": [{"a": 1}, {"a": 2}],
    }
    small, note = fit_schema({"type": "object", "$defs": {"U": {}}}, 6000)
    assert small == {"type": "object"} and note == ""  # unreachable definitions go first
    cut, note = fit_schema(schema, 6000)
    assert len(json.dumps(cut, separators=(",", ":"))) <= 6000 < len(json.dumps(schema))
    assert "Unused" not in cut["$defs"] and cut["$defs"]["A"] == {"type": "integer"}
    assert (
        cut["examples"] == [{"a": 1}] and "cut to" in note and "(cut for size)" in json.dumps(cut)
    )


def test_the_index_ranks_title_words_above_description_words() -> None:
    index = SearchIndex(
        [
            Document("x_delete_pet", "Delete a pet", "Removes a pet for good."),
            Document("x_list_pets", "List pets", "Lists pets; use it before you delete one."),
            Document("x_get_store", "Get the store", "Store details."),
        ]
    )
    assert index.search("delete a pet")[:2] == ["x_delete_pet", "x_list_pets"]
    assert index.search("store", allowed=["x_list_pets"]) == []
    assert index.search("zebra") == []
    assert len(index) == 3


def test_catalog_without_tool_modes_lists_everything(catalog: Catalog) -> None:
    assert catalog.modes.mode == "all"
    data = copy.deepcopy(catalog_data())
    data["toolModes"] = {"mode": "all"}
    assert load_catalog(data).modes.core == ()


def test_a_phrase_reads_as_the_action_it_means() -> None:
    def keys(query: str) -> list[str]:
        return [key for key, _ in query_terms(query) if not key.startswith("?")]

    # A verb and its particle, with the object between them or not.
    assert keys("get rid of the stale labels") == ["delet", "stal", "label"]
    assert keys("take bob off the reviewers list") == ["remov", "bob", "reviewer", "list"]
    assert keys("switch the nightly webhook off") == ["disabl", "night", "webhook"]
    assert keys("put erin into the admins team")[:1] == ["add"]
    assert keys("roll the release back") == ["revert", "releas"]
    assert keys("spin up a fresh worker") == ["creat", "fresh", "worker"]  # a new one, made
    index = index_of(
        ("x_get_label", "Get a label", "/labels/{name}"),
        ("x_delete_label", "Delete a label", "/labels/{name}"),
        ("x_put_hook", "Update a hook", "/hooks/{id}"),
        ("x_post_hook_disable", "Disable a hook", "/hooks/{id}/disable"),
    )
    assert index.search("get rid of the wontfix label", 1) == ["x_delete_label"]
    assert index.search("turn the deploy hook off", 1) == ["x_post_hook_disable"]


def test_everyday_phrases_name_the_catalogue_s_nouns() -> None:
    index = index_of(
        ("x_get_builds", "List builds", "/builds"),
        ("x_post_webhooks", "Create a webhook", "/webhooks"),
        ("x_put_settings", "Update the settings", "/settings"),
        ("x_get_audit_log", "List the audit log", "/audit-log"),
        ("x_post_members", "Add a member", "/repos/{r}/members"),
        ("x_put_access", "Update access settings", "/repos/{r}/access-settings"),
        ("x_post_reminders", "Create a reminder", "/reminders"),
        ("x_put_reminder", "Set the reminder", "/reminders/{id}"),
        ("x_post_leave", "Leave a conversation", "/conversations/{c}/leave"),
        ("x_post_comments", "Add a comment", "/conversations/{c}/comments"),
    )
    # Being told when something happens is a new webhook; "who did it" asks for the history.
    assert index.search("get notified whenever a build finishes", 1) == ["x_post_webhooks"]
    hooks = index_of(
        ("x_get_builds", "List builds", "/builds"),
        ("x_post_webhooks", "Create a webhook", "/webhooks"),
        ("x_get_webhook", "Get a webhook", "/webhooks/{id}"),
        ("x_get_webhooks", "List the webhooks", "/webhooks"),
    )
    assert hooks.search("get notified whenever a build finishes", 1) == ["x_post_webhooks"]
    assert index.search("who changed the billing settings", 1) == ["x_get_audit_log"]
    # Access to a shared thing is a membership; "set a" and "leave a" make a new one.
    assert index.search("give bob write access to the repo", 1) == ["x_post_members"]
    assert index.search("set a reminder for friday", 1) == ["x_post_reminders"]
    assert index.search("leave a comment on the conversation", 1) == ["x_post_comments"]


def test_who_asks_for_the_people_however_many() -> None:
    index = index_of(
        ("x_get_owner", "Get an owner of a repository", "/owners/{id}"),
        ("x_get_owners", "Get owners of a repository", "/repos/{r}/owners"),
    )
    assert index.search("who is an owner of the repo", 1) == ["x_get_owners"]
    assert index.search("get the owner 42 of the repo", 1) == ["x_get_owner"]


def test_how_much_is_allowed_asks_for_the_limit() -> None:
    index = index_of(
        ("x_get_repo", "Get a repository", "/repos/{id}"),
        ("x_get_limits", "Get a repository's limits", "/repos/{id}/limits"),
    )
    assert index.search("how many collaborators is the repo allowed", 1) == ["x_get_limits"]


def test_admin_is_short_for_administrator() -> None:
    index = index_of(
        ("x_get_members", "List organization members", "/orgs/{o}/members"),
        ("x_get_admins", "List organization admins", "/orgs/{o}/admins"),
    )
    assert index.search("who are the administrators of the org", 1) == ["x_get_admins"]


def test_irregular_past_forms_meet_their_verbs() -> None:
    assert [key for key, _ in query_terms("resend what bob sent")][-1] == "send"
    index = SearchIndex(
        [
            Document(
                "x_get_env",
                "Get an environment",
                "Returns an environment: its name and settings.",
                path="/envs/{e}",
                method="GET",
            ),
            Document(
                "x_put_env",
                "Update an environment",
                "Renames the environment, or sets whether it is hidden.",
                path="/envs/{e}",
                method="PUT",
            ),
        ]
    )
    assert index.search("hide the preview environment", 1) == ["x_put_env"]


def test_raise_makes_a_new_one() -> None:
    about = "Returns a ticket about a printer or another device."
    index = SearchIndex(
        [
            Document("x_get_ticket", "Get a ticket", about, path="/tickets/{id}", method="GET"),
            Document("x_post_tickets", "Create a ticket", "", path="/tickets", method="POST"),
        ]
    )
    assert index.search("raise a ticket about the broken printer", 1) == ["x_post_tickets"]


def test_british_spellings_meet_american_ones() -> None:
    def key(word: str) -> str:
        return query_terms(word)[0][0]

    for british, american in [("organisation", "organization"), ("licence", "license")]:
        assert key(british) == key(american)
    assert key("favourites") == key("favorites")


def test_one_or_more_in_a_title_says_nothing_of_what() -> None:
    assert terms("Creates one or more quotes") == ["creat", "quot"]
    assert terms("Retrieves either one or many journals")[-1] == "journal"
    index = index_of(
        ("x_get_quotes", "Retrieves sales quotes", "/quotes"),
        ("x_put_quotes", "Creates one or more quotes", "/quotes"),
    )
    assert index.search("create a sales quote for the redesign", 1) == ["x_put_quotes"]


def test_removing_one_is_not_removing_them_all() -> None:
    index = index_of(
        ("x_delete_tags", "Remove tags from a photo", "/photos/{p}/tags"),
        ("x_delete_tag", "Remove a tag from a photo", "/photos/{p}/tags/{t}"),
    )
    assert index.search("take the tag off this photo", 1) == ["x_delete_tag"]
    assert index.search("remove all the tags from this photo", 1) == ["x_delete_tags"]


def test_words_joined_in_a_query_are_a_name_unless_the_catalogue_joins_them() -> None:
    index = index_of(
        ("x_get_flag", "Get a feature flag", "/flags/{key}"),
        ("x_get_checkout", "Get a checkout", "/checkouts/{id}"),
        ("x_get_oncalls", "List on-calls", "/schedules/{s}/on-calls"),
        ("x_get_schedule", "Get a schedule", "/schedules/{s}"),
    )
    # `new-checkout` names the flag: "checkout" counts as a name's word, for less.
    assert index.search("show the new-checkout flag", 1) == ["x_get_flag"]
    # The catalogue writes "on-calls": the same words in a query are words, not a name.
    assert index.search("show the on-call schedule", 1) == ["x_get_oncalls"]


def test_called_and_named_introduce_a_name() -> None:
    index = index_of(
        ("x_get_company", "Retrieve a company", "/companies/{id}"),
        ("x_get_call", "Get a call", "/calls/{id}"),
    )
    assert index.search("look up the company called Initech", 1) == ["x_get_company"]
    assert [key for key, _ in query_terms("a team named infra")] == ["team", "infra"]
