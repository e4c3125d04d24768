"""Dynamic mode on GitHub's 1,223 operations (issue 8): a small tools/list, plain-language
search that finds the right operation, and a call path that refuses exactly what a listed
tool refuses. The catalog is built once for the module (about 30 s: slow tier)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcpmint.config import load_config
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import build_config
from mcpmint.render.templates import catalog
from mcpmint.runtime.catalog import Catalog, load_catalog
from mcpmint.runtime.server import build_server

from .conftest import CORPUS
from .support import User

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

GITHUB = CORPUS / "github.json"
SEARCH, DESCRIBE, CALL = "github_search_tools", "github_describe_tool", "github_call_tool"
ENV = {"GITHUB_AUDIT": "off"}


@pytest.fixture(scope="module")
def github(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    if not GITHUB.is_file():
        pytest.skip("the corpus is not there (../shared/corpus)")
    folder: Path = tmp_path_factory.mktemp("github")
    config_file = folder / "mcpmint.yaml"
    config_file.write_text(
        f"sources:\n  - spec: {json.dumps(str(GITHUB))}\n    namespace: github\n"
        "tools:\n  mode: dynamic\n",
        encoding="utf-8",
    )
    sink = DiagnosticSink()
    config = load_config(config_file, sink)
    assert config is not None
    server = build_config(config, sink)
    # Through JSON, exactly as tools.json carries it.
    return load_catalog(json.loads(json.dumps(catalog(server))))


class Upstream:
    def __init__(self) -> None:
        self.requests: list[httpx2.Request] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return httpx2.Response(201, json={"id": 1, "number": 7, "title": "t"})


@asynccontextmanager
async def connect(
    github: Catalog, upstream: Upstream, env: dict[str, str] | None = None, answer: Any = None
) -> AsyncIterator[Client]:
    server = build_server(
        github, transport=httpx2.MockTransport(upstream.handle), environ={**ENV, **(env or {})}
    )
    async with Client(server, elicitation_callback=answer) as client:
        yield client


def text(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_dynamic_tools_list_of_github_is_under_5000_estimated_tokens(
    github: Catalog,
) -> None:
    async with connect(github, Upstream()) as client:
        tools = (await client.list_tools()).tools
    dumped = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]
    size = len(json.dumps({"tools": dumped}, separators=(",", ":")).encode("utf-8"))
    assert len(github.tools) == 1223
    assert [t.name for t in tools] == [SEARCH, DESCRIBE, CALL]
    assert size // 4 < 5000


QUERIES = [
    ("list the issues of a repository", "github_issues_list_for_repo"),
    ("create a pull request", "github_pulls_create"),
    ("merge a pull request", "github_pulls_merge"),
    ("get the contents of a file in a repository", "github_repos_get_content"),
    ("add labels to an issue", "github_issues_add_labels"),
    ("write a comment on an issue", "github_issues_create_comment"),
    ("list workflow runs for a repository", "github_actions_list_workflow_runs_for_repo"),
    ("delete branch protection", "github_repos_delete_branch_protection"),
    ("create a release", "github_repos_create_release"),
    ("list the members of an organization", "github_orgs_list_members"),
    ("who is the authenticated user", "github_users_get_authenticated"),
    ("list commits on a repository", "github_repos_list_commits"),
    ("fork a repository", "github_repos_create_fork"),
    ("star a repository", "github_activity_star_repo_for_authenticated_user"),
    ("search code", "github_search_code"),
    ("remove a collaborator from a repository", "github_repos_remove_collaborator"),
    ("add a collaborator to a repository", "github_repos_add_collaborator"),
    ("download the logs of a workflow run", "github_actions_download_workflow_run_logs"),
    ("list branches", "github_repos_list_branches"),
    ("get a single commit", "github_repos_get_commit"),
    ("create a gist", "github_gists_create"),
    ("list my notifications", "github_activity_list_notifications_for_authenticated_user"),
]


async def test_plain_language_queries_find_the_right_operation_in_the_top_3(
    github: Catalog,
) -> None:
    missed = []
    async with connect(github, Upstream()) as client:
        for query, wanted in QUERIES:
            result = await client.call_tool(SEARCH, {"query": query, "limit": 3})
            assert result.structured_content is not None
            names = [t["name"] for t in result.structured_content["tools"]]
            if wanted not in names:
                missed.append((query, wanted, names))
    assert missed == [], "\n".join(map(str, missed))


async def test_describe_tool_gives_a_tools_full_input_schema(github: Catalog) -> None:
    async with connect(github, Upstream()) as client:
        result = await client.call_tool(DESCRIBE, {"name": "github_issues_list_for_repo"})
    tool = github.tool("github_issues_list_for_repo")
    assert tool is not None and result.structured_content is not None
    assert result.structured_content["inputSchema"] == tool.input_schema
    assert result.structured_content["annotations"]["readOnlyHint"] is True


LIST = "github_issues_list_for_repo"
REFUSALS = [
    ("an invalid argument", {"owner": "o", "repo": "r", "per_page": "many"}, {}),
    ("an unknown argument", {"owner": "o", "repo": "r", "color": "red"}, {}),
    (
        "a disallowed value",
        {"owner": "evil", "repo": "r"},
        {"GITHUB_ALLOW_GITHUB_ISSUES_LIST_FOR_REPO_OWNER": "octocat"},
    ),
]


@pytest.mark.parametrize(("case", "arguments", "env"), REFUSALS, ids=[r[0] for r in REFUSALS])
async def test_call_tool_refuses_a_bad_call_exactly_as_a_listed_tool_would(
    github: Catalog, case: str, arguments: dict[str, Any], env: dict[str, str]
) -> None:
    upstream = Upstream()
    async with connect(github, upstream, env) as client:
        direct = await client.call_tool(LIST, arguments)
        routed = await client.call_tool(CALL, {"name": LIST, "arguments": arguments})
    assert direct.is_error and routed.is_error
    assert text(routed) == text(direct)
    assert upstream.requests == []


async def test_call_tool_of_a_hidden_tool_is_unknown_as_a_direct_call_is(
    github: Catalog,
) -> None:
    upstream = Upstream()
    env = {"GITHUB_TOOLS_DENY": "github_repos_delete"}
    arguments = {"owner": "o", "repo": "r"}
    async with connect(github, upstream, env) as client:
        found = await client.call_tool(SEARCH, {"query": "delete a repository", "limit": 25})
        with pytest.raises(MCPError) as direct:
            await client.call_tool("github_repos_delete", arguments)
        with pytest.raises(MCPError) as routed:
            await client.call_tool(CALL, {"name": "github_repos_delete", "arguments": arguments})
    assert found.structured_content is not None
    assert "github_repos_delete" not in [t["name"] for t in found.structured_content["tools"]]
    assert routed.value.error.message == direct.value.error.message
    assert direct.value.error.message == "Unknown tool: github_repos_delete"
    assert upstream.requests == []


async def test_call_tool_of_a_write_needs_the_users_confirmation(github: Catalog) -> None:
    call = {"name": "github_issues_create", "arguments": {"owner": "o", "repo": "r", "title": "t"}}
    upstream = Upstream()
    async with connect(github, upstream) as client:  # a client that cannot be asked
        refused = await client.call_tool(CALL, call)
    assert refused.is_error and "needs the user's confirmation" in text(refused)
    assert upstream.requests == []
    yes = User()
    async with connect(github, upstream, answer=yes) as client:
        done = await client.call_tool(CALL, call)
    assert not done.is_error, text(done)
    assert yes.asked and yes.asked[0].startswith("Confirm github_issues_create")
    [request] = upstream.requests
    assert (request.method, request.url.path) == ("POST", "/repos/o/r/issues")
    assert json.loads(request.content) == {"title": "t"}
