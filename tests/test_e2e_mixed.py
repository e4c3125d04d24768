"""End to end, several sources: specs/mixed/mcpmint.yaml (the Petstore spec shaped by selection
and overrides, plus the support desk's tool manifest with a handler tool, a resource template,
a handler resource and a prompt) generated, its hooks.py filled in as a user would, and served
over stdio to the SDK client. HTTP-bound tools and resources go to a recording upstream on
loopback, so the requests each source's tools send are checked, credentials included.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcpmint.config import load_config
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import GenerateOptions, generate

from .support import REPO, Loopback, Seen, User, clean_env, loopback

pytestmark = [pytest.mark.slow, pytest.mark.anyio]
CONFIG = REPO / "specs" / "mixed" / "mcpmint.yaml"

# What a user writes into the generated hooks.py: the handler tool, the handler resource and a
# before_call hook that turns "PET-7" into the "7" the Petstore API expects.
USER_HOOKS = """
from __future__ import annotations

from typing import Any

from ._generated import models
from ._runtime.hooks import Hooks, Refusal

__all__ = ["Refusal", "hooks"]

hooks = Hooks()


@hooks.handler("support_suggest_reply")
async def support_suggest_reply(arguments: models.SupportSuggestReplyArguments) -> str:
    return f"Dear owner, about {arguments.ticket_id}: we are on it."


@hooks.resource("support_refund_policy")
def support_refund_policy(uri: str, variables: dict[str, str]) -> str:
    return "# Refunds\\nWithin 30 days."


@hooks.before_call("petstore_get_pet")
def bare_pet_ids(tool: str, arguments: dict[str, Any], caller: str) -> dict[str, Any] | Refusal:
    if arguments["petId"] == "PET-0":
        return Refusal("Pet 0 is a test record; ask for another pet.")
    return {**arguments, "petId": arguments["petId"].removeprefix("PET-")}
"""


ANSWERS: dict[tuple[str, str], Any] = {
    ("GET", "/v1/pets"): [{"id": 1, "name": "Rex"}],
    ("GET", "/v1/pets/7"): {"id": 7, "name": "Rex"},
    ("POST", "/support/tickets"): {"ticket_id": "T-101"},
    ("GET", "/support/tickets/T-100"): {"ticket_id": "T-100", "summary": "Limp", "status": "open"},
}


@pytest.fixture(scope="module")
def upstream() -> Iterator[Loopback]:
    """Both sources' APIs on one loopback server: /v1 is Petstore, /support the desk."""

    def answer(seen: Seen) -> tuple[int, Any]:
        found = ANSWERS.get((seen.method, seen.path.split("?", 1)[0]))
        return (404, {"message": "not found"}) if found is None else (200, found)

    with loopback(answer) as server:
        yield server


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mixed") / "petcare-mcp"
    sink = DiagnosticSink()
    config = load_config(CONFIG, sink)
    assert config is not None
    generate(config, GenerateOptions(output=out), sink)
    assert not sink.has_errors, [d.render() for d in sink]
    (out / "src" / "petcare_mcp" / "hooks.py").write_text(USER_HOOKS, encoding="utf-8")
    return out


def stdio(package: Path, upstream: Loopback) -> StdioServerParameters:
    env = clean_env(
        PETSTORE_BASE_URL=f"{upstream.url}/v1",
        PETSTORE_SUPPORT_BASE_URL=f"{upstream.url}/support",
        PETSTORE_SUPPORT_DESK_KEY="desk-secret",
        PETSTORE_RETRIES="0",
        PYTHONPATH=os.pathsep.join([str(package / "src"), *sys.path]),
    )
    return StdioServerParameters(command=sys.executable, args=["-m", "petcare_mcp"], env=env)


def text_of(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_the_mixed_server_lists_tools_resources_templates_and_prompts_over_stdio(
    package: Path, upstream: Loopback
) -> None:
    async with Client(stdio(package, upstream)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        prompts = (await client.list_prompts()).prompts
    # createPets is left out by `include: {methods: [GET]}`; showPetById is renamed.
    assert sorted(tools) == [
        "petstore_get_pet",
        "petstore_list_pets",
        "support_get_ticket",
        "support_open_ticket",
        "support_suggest_reply",
    ]
    assert tools["petstore_get_pet"].description == (
        "Reads one pet by id. Use it when you know the pet's id. Returns the pet."
    )
    assert [(r.name, str(r.uri), r.mime_type) for r in resources] == [
        ("support_refund_policy", "support://policies/refunds", "text/markdown")
    ]
    assert [(t.name, t.uri_template) for t in templates] == [
        ("petstore_get_pet", "petstore://pets/{petId}"),  # opt-in, from the OpenAPI source
        ("support_ticket", "support://tickets/{ticket_id}"),
    ]
    [prompt] = prompts
    assert prompt.name == "support_triage_ticket"
    assert [(a.name, a.required) for a in prompt.arguments or []] == [
        ("ticket_id", True),
        ("tone", False),
    ]


async def test_each_source_calls_its_own_upstream_with_its_own_credentials(
    package: Path, upstream: Loopback
) -> None:
    user = User()
    upstream.seen.clear()
    async with Client(stdio(package, upstream), elicitation_callback=user) as client:
        pets = await client.call_tool("petstore_list_pets", {"limit": 5})
        opened = await client.call_tool(
            "support_open_ticket", {"summary": "Rex limps", "pet_id": "7"}
        )
    assert not pets.is_error and not opened.is_error, text_of(pets) + text_of(opened)
    assert opened.structured_content == {"ticket_id": "T-101"}
    assert len(user.asked) == 1 and "support_open_ticket" in user.asked[0]  # a write
    listed, created = upstream.seen
    assert (listed.method, listed.path) == ("GET", "/v1/pets?limit=5")
    assert "x-desk-key" not in listed.headers  # the desk's key never goes to Petstore
    assert (created.method, created.path) == ("POST", "/support/tickets")
    assert created.headers["x-desk-key"] == "desk-secret"
    assert json.loads(created.body) == {"summary": "Rex limps", "pet_id": "7"}


async def test_hooks_and_handlers_written_by_the_user_run_in_the_served_package(
    package: Path, upstream: Loopback
) -> None:
    upstream.seen.clear()
    async with Client(stdio(package, upstream)) as client:
        pet = await client.call_tool("petstore_get_pet", {"petId": "PET-7"})
        refused = await client.call_tool("petstore_get_pet", {"petId": "PET-0"})
        reply = await client.call_tool("support_suggest_reply", {"ticket_id": "T-100"})
    assert not pet.is_error, text_of(pet)
    assert [(r.method, r.path) for r in upstream.seen] == [("GET", "/v1/pets/7")]
    assert refused.is_error and "Pet 0 is a test record" in text_of(refused)
    assert not reply.is_error and text_of(reply) == "Dear owner, about T-100: we are on it."


async def test_resources_are_read_through_http_and_handlers_and_prompts_are_filled_in(
    package: Path, upstream: Loopback
) -> None:
    upstream.seen.clear()
    async with Client(stdio(package, upstream)) as client:
        ticket = await client.read_resource("support://tickets/T-100")
        pet = await client.read_resource("petstore://pets/7")
        policy = await client.read_resource("support://policies/refunds")
        prompt = await client.get_prompt("support_triage_ticket", {"ticket_id": "T-100"})
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("support://nothing/here")
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("support_triage_ticket", {})
    [content] = ticket.contents
    assert isinstance(content, types.TextResourceContents)
    assert json.loads(content.text) == {"ticket_id": "T-100", "summary": "Limp", "status": "open"}
    request, pet_request = upstream.seen
    assert (request.method, request.path) == ("GET", "/support/tickets/T-100")
    assert request.headers["x-desk-key"] == "desk-secret"
    assert (pet_request.method, pet_request.path) == ("GET", "/v1/pets/7")
    assert "x-desk-key" not in pet_request.headers
    [pet_content] = pet.contents
    assert isinstance(pet_content, types.TextResourceContents)
    assert json.loads(pet_content.text) == {"id": 7, "name": "Rex"}
    [policy_text] = policy.contents
    assert isinstance(policy_text, types.TextResourceContents)
    assert (
        policy_text.text == "# Refunds\nWithin 30 days."
        and policy_text.mime_type == "text/markdown"
    )
    [message] = prompt.messages
    assert message.role == "user" and isinstance(message.content, types.TextContent)
    assert message.content.text == (
        "Read support ticket T-100 (resource support://tickets/T-100), decide its priority and "
        'explain why in a  tone. Answer as {"priority": ...}.'
    )
    assert "Resource not found" in unknown.value.error.message
    assert "missing required argument 'ticket_id'" in missing.value.error.message
