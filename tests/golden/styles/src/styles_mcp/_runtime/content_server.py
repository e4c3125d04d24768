"""The resources/* and prompts/* handlers of the low-level server (see `content.py`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from .content import PromptSpec, ResourceSpec, render_text

if TYPE_CHECKING:
    from .catalog import Catalog, Tool
    from .hooks import Hooks
    from .upstream import UpstreamResponse

__all__ = ["RESOURCE_NOT_FOUND", "ContentHandlers", "content_handlers"]

RESOURCE_NOT_FOUND = -32002  # the MCP spec's code for resources/read of an unknown URI
_MAX_TEXT_BYTES = 1024 * 1024

Fetch = Callable[["Tool", Mapping[str, str]], Awaitable["UpstreamResponse | str"]]


def content_handlers(catalog: Catalog, fetch: Fetch, hooks: Callable[[], Hooks]) -> dict[str, Any]:
    """The low-level `Server`'s resources/* and prompts/* handlers, only for what the catalog
    has: a server without resources or prompts does not announce those capabilities."""
    handlers = ContentHandlers(catalog.resources, catalog.prompts, fetch, hooks)
    found: dict[str, Any] = {}
    if catalog.resources:
        found["on_list_resources"] = handlers.list_resources
        found["on_list_resource_templates"] = handlers.list_resource_templates
        found["on_read_resource"] = handlers.read_resource
    if catalog.prompts:
        found["on_list_prompts"] = handlers.list_prompts
        found["on_get_prompt"] = handlers.get_prompt
    return found


class ContentHandlers:
    """The resources/* and prompts/* handlers of the low-level server."""

    def __init__(
        self,
        resources: Sequence[ResourceSpec],
        prompts: Sequence[PromptSpec],
        fetch: Fetch,
        hooks: Callable[[], Hooks],
    ) -> None:
        self._resources = tuple(resources)
        self._prompts = {prompt.name: prompt for prompt in prompts}
        self._fetch = fetch
        self._hooks = hooks  # read at call time: build_server sets the registry after us

    async def list_resources(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    name=r.name,
                    title=r.title or None,
                    uri=r.uri,
                    description=r.description or None,
                    mime_type=r.mime_type,
                )
                for r in self._resources
                if r.uri
            ]
        )

    async def list_resource_templates(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name=r.name,
                    title=r.title or None,
                    uri_template=r.uri_template,
                    description=r.description or None,
                    mime_type=r.mime_type,
                )
                for r in self._resources
                if r.uri_template
            ]
        )

    async def read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        for resource in self._resources:
            variables = resource.match(uri)
            if variables is not None:
                return await self._read(resource, uri, variables)
        raise MCPError(code=RESOURCE_NOT_FOUND, message=f"Resource not found: {uri}")

    async def _read(
        self, resource: ResourceSpec, uri: str, variables: dict[str, str]
    ) -> types.ReadResourceResult:
        if resource.reader is None:
            text = await self._hooks().read_resource(resource.name, uri, variables)
            mime = resource.mime_type
        else:
            response = await self._fetch(resource.reader, variables)
            if isinstance(response, str):
                raise MCPError(code=types.INTERNAL_ERROR, message=response)
            if not 200 <= response.status < 300:
                raise MCPError(
                    code=types.INTERNAL_ERROR,
                    message=f"Reading {uri} failed: the upstream API answered HTTP "
                    f"{response.status} {response.reason}.",
                )
            text = response.body[:_MAX_TEXT_BYTES].decode("utf-8", errors="replace")
            mime = response.content_type.split(";", 1)[0].strip() or resource.mime_type
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)]
        )

    async def list_prompts(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=prompt.name,
                    title=prompt.title or None,
                    description=prompt.description or None,
                    arguments=[
                        types.PromptArgument(
                            name=a.name, description=a.description or None, required=a.required
                        )
                        for a in prompt.arguments
                    ],
                )
                for prompt in self._prompts.values()
            ]
        )

    async def get_prompt(
        self, ctx: Any, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        prompt = self._prompts.get(params.name)
        if prompt is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
        values = dict(params.arguments or {})
        declared = {a.name for a in prompt.arguments}
        unknown = sorted(set(values) - declared)
        missing = [a.name for a in prompt.arguments if a.required and not values.get(a.name)]
        if unknown or missing:
            problems = [f"unknown argument {n!r}" for n in unknown]
            problems += [f"missing required argument {n!r}" for n in missing]
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Prompt {prompt.name}: " + "; ".join(problems),
            )
        return types.GetPromptResult(
            description=prompt.description or None,
            messages=[
                types.PromptMessage(
                    role=role,  # type: ignore[arg-type]
                    content=types.TextContent(type="text", text=render_text(text, values)),
                )
                for role, text in prompt.messages
            ],
        )
