"""Handler tools and before/after hooks, run through the real pipeline and the SDK client.

The catalog is what `mcpmint generate specs/internal-tools.yaml` writes to tools.json; the
server is the runtime's, in memory; the upstream is an httpx2 mock transport that records
every request, so "nothing was sent" is checked, not assumed.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from pydantic import BaseModel

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import build
from mcpmint.render.templates import catalog as render_catalog
from mcpmint.runtime.catalog import Catalog, load_catalog
from mcpmint.runtime.hooks import Hooks, Refusal
from mcpmint.runtime.server import ConfigurationError, build_server

from .conftest import SPECS
from .support import User

pytestmark = pytest.mark.anyio
MODES = ["auto", "legacy"]
ENV = {"INTERNAL_TOKEN": "secret-token", "INTERNAL_RETRIES": "0"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def catalog_data() -> dict[str, Any]:
    sink = DiagnosticSink()
    server = build(SPECS / "internal-tools.yaml", sink)
    assert not sink.has_errors
    data: dict[str, Any] = json.loads(json.dumps(render_catalog(server)))
    return data


def internal_catalog(**confirmation: str) -> Catalog:
    data = catalog_data()
    for tool in data["tools"]:
        tool["confirmation"] = confirmation.get(tool["name"], tool["confirmation"])
    return load_catalog(data)


class Upstream:
    def __init__(self, body: Any = None) -> None:
        self.body = {"id": "12345", "name": "Ada", "tier": "pro"} if body is None else body
        self.requests: list[httpx2.Request] = []
        self.transport = httpx2.MockTransport(self.handle)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return httpx2.Response(200, json=self.body)


async def call(
    hooks: Hooks,
    name: str,
    arguments: dict[str, Any],
    *,
    mode: str = "auto",
    upstream: Upstream | None = None,
    catalog: Catalog | None = None,
    user: User | None = None,
) -> types.CallToolResult:
    server = build_server(
        catalog or internal_catalog(),
        transport=(upstream or Upstream()).transport,
        environ=ENV,
        hooks=hooks,
    )
    async with Client(server, mode=mode, elicitation_callback=user or User()) as client:
        return await client.call_tool(name, arguments)


def text(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


# ------------------------------------------------------------------------------ handlers


@pytest.mark.parametrize("mode", MODES)
async def test_a_handler_tool_without_a_handler_says_where_its_stub_is(mode: str) -> None:
    result = await call(Hooks(), "internal_score_lead", {"company": "Acme"}, mode=mode)
    assert result.is_error
    assert "internal_score_lead is not implemented yet" in text(result)
    assert "_generated/handler_stubs.py" in text(result) and "hooks.py" in text(result)


async def test_an_unfilled_stub_says_which_function_to_fill_in() -> None:
    hooks = Hooks()

    @hooks.handler("internal_score_lead")
    async def internal_score_lead(arguments: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    result = await call(hooks, "internal_score_lead", {"company": "Acme"})
    assert result.is_error
    assert "fill in hooks.py:internal_score_lead" in text(result)


class LeadArguments(BaseModel):
    company: str
    employees: int | None = None


class LeadResult(BaseModel):
    score: int
    reasons: list[str] | None = None


@pytest.mark.parametrize("mode", MODES)
async def test_a_filled_handler_gets_typed_arguments_and_returns_structured_content(
    mode: str,
) -> None:
    hooks = Hooks()
    seen: list[object] = []

    @hooks.handler("internal_score_lead")
    async def internal_score_lead(arguments: LeadArguments) -> LeadResult:
        seen.append(arguments)
        return LeadResult(score=min(100, (arguments.employees or 0) * 2), reasons=["size"])

    upstream = Upstream()
    result = await call(
        hooks,
        "internal_score_lead",
        {"company": "Acme", "employees": 30},
        mode=mode,
        upstream=upstream,
    )
    assert not result.is_error, text(result)
    assert result.structured_content == {"score": 60, "reasons": ["size"]}
    assert seen == [LeadArguments(company="Acme", employees=30)]
    assert upstream.requests == []


async def test_handler_arguments_are_validated_before_the_handler_runs() -> None:
    hooks = Hooks()
    ran: list[object] = []

    @hooks.handler("internal_score_lead")
    def internal_score_lead(arguments: dict[str, Any]) -> dict[str, Any]:
        ran.append(arguments)
        return {"score": 1}

    result = await call(hooks, "internal_score_lead", {"company": "Acme", "employees": "many"})
    assert result.is_error and "employees" in text(result)
    assert ran == []


async def test_a_handler_result_that_breaks_the_output_schema_is_an_error_result() -> None:
    hooks = Hooks()

    @hooks.handler("internal_score_lead")
    def internal_score_lead(arguments: dict[str, Any]) -> dict[str, Any]:
        return {"score": "high"}

    result = await call(hooks, "internal_score_lead", {"company": "Acme"})
    assert result.is_error and "does not match the tool's output schema" in text(result)


async def test_a_handler_that_raises_is_an_error_result_not_a_crash() -> None:
    hooks = Hooks()

    @hooks.handler("internal_score_lead")
    def internal_score_lead(arguments: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("database down")

    result = await call(hooks, "internal_score_lead", {"company": "Acme"})
    assert result.is_error and "Internal error" in text(result)
    assert "database down" not in text(result)  # details stay in the log


async def test_a_handler_tool_that_needs_confirmation_asks_the_user_with_its_arguments() -> None:
    hooks = Hooks()

    @hooks.handler("internal_score_lead")
    def internal_score_lead(arguments: dict[str, Any]) -> dict[str, Any]:
        return {"score": 5}

    user = User()
    catalog = internal_catalog(internal_score_lead="required")
    result = await call(
        hooks, "internal_score_lead", {"company": "Acme"}, catalog=catalog, user=user
    )
    assert not result.is_error, text(result)
    assert len(user.asked) == 1 and "internal_score_lead" in user.asked[0]
    assert '"company": "Acme"' in user.asked[0]


# ------------------------------------------------------------------------------ HTTP tools


@pytest.mark.parametrize("mode", MODES)
async def test_an_http_bound_manifest_tool_sends_path_header_body_and_credential(mode: str) -> None:
    upstream = Upstream(body={"note_id": "n1"})
    arguments = {"customer_id": "12345", "text": "Prefers email.", "request_id": "r-1"}
    result = await call(Hooks(), "internal_add_note", arguments, mode=mode, upstream=upstream)
    assert not result.is_error, text(result)
    assert result.structured_content == {"note_id": "n1"}
    [sent] = upstream.requests
    assert sent.method == "POST"
    assert str(sent.url) == "https://backoffice.example.com/api/customers/12345/notes"
    assert sent.headers["idempotency-key"] == "r-1"
    assert sent.headers["authorization"] == "Bearer secret-token"
    assert json.loads(sent.content) == {"text": "Prefers email."}


# ------------------------------------------------------------------------------ hooks


@pytest.mark.parametrize("mode", MODES)
async def test_a_before_call_hook_rewrites_acme_ids_into_what_the_upstream_expects(
    mode: str,
) -> None:
    hooks = Hooks()

    @hooks.before_call("internal_get_customer")
    def strip_prefix(tool: str, arguments: dict[str, Any], caller: str) -> dict[str, Any]:
        arguments["customer_id"] = arguments["customer_id"].removeprefix("ACME_")
        return arguments

    upstream = Upstream()
    result = await call(
        hooks,
        "internal_get_customer",
        {"customer_id": "ACME_12345"},
        mode=mode,
        upstream=upstream,
    )
    assert not result.is_error, text(result)
    assert [str(r.url) for r in upstream.requests] == [
        "https://backoffice.example.com/api/customers/12345"
    ]


async def test_a_before_call_refusal_stops_the_call_with_its_message_and_sends_nothing() -> None:
    hooks = Hooks()

    @hooks.before_call()
    async def office_hours(tool: str, arguments: dict[str, Any], caller: str) -> Refusal:
        return Refusal("Notes can only be added during office hours.")

    upstream, user = Upstream(), User()
    arguments = {"customer_id": "12345", "text": "hello"}
    result = await call(hooks, "internal_add_note", arguments, upstream=upstream, user=user)
    assert result.is_error
    assert "Notes can only be added during office hours." in text(result)
    assert upstream.requests == [] and user.asked == []  # before confirmation, before sending


async def test_rewritten_arguments_are_validated_again() -> None:
    hooks = Hooks()

    @hooks.before_call("internal_add_note")
    def break_it(tool: str, arguments: dict[str, Any], caller: str) -> dict[str, Any]:
        return {**arguments, "customer_id": "not-a-number", "extra": 1}

    upstream = Upstream()
    result = await call(
        hooks, "internal_add_note", {"customer_id": "1", "text": "x"}, upstream=upstream
    )
    assert result.is_error and "customer_id" in text(result) and "extra" in text(result)
    assert upstream.requests == []


async def test_hooks_run_all_tools_first_then_the_tools_own_and_after_hooks_rewrite_results() -> (
    None
):
    hooks = Hooks()
    order: list[str] = []

    @hooks.before_call("internal_get_customer")
    def own(tool: str, arguments: dict[str, Any], caller: str) -> dict[str, Any]:
        order.append(f"own:{caller}")
        return arguments

    @hooks.before_call()
    def every(tool: str, arguments: dict[str, Any], caller: str) -> dict[str, Any]:
        order.append(f"all:{tool}")
        return arguments

    @hooks.after_call("internal_get_customer")
    def hide_tier(
        tool: str, arguments: dict[str, Any], result: types.CallToolResult
    ) -> types.CallToolResult:
        structured = dict(result.structured_content or {})
        structured.pop("tier", None)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(structured))],
            structured_content=structured,
        )

    result = await call(hooks, "internal_get_customer", {"customer_id": "7"})
    assert order == ["all:internal_get_customer", "own:local"]
    assert result.structured_content == {"id": "12345", "name": "Ada"}


def test_a_hook_for_a_tool_that_does_not_exist_stops_the_server_at_start() -> None:
    hooks = Hooks()

    @hooks.before_call("internal_get_costumer")
    def typo(tool: str, arguments: dict[str, Any], caller: str) -> dict[str, Any]:
        return arguments

    with pytest.raises(ConfigurationError, match="unknown tool 'internal_get_costumer'"):
        build_server(internal_catalog(), environ=ENV, hooks=hooks)


def test_a_handler_for_an_http_tool_is_refused_at_start() -> None:
    hooks = Hooks()

    @hooks.handler("internal_get_customer")
    def wrong(arguments: dict[str, Any]) -> dict[str, Any]:
        return {}

    with pytest.raises(ConfigurationError, match="is an HTTP tool"):
        build_server(internal_catalog(), environ=ENV, hooks=hooks)
