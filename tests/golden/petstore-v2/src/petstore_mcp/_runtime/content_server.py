"""The resources/* and prompts/* handlers of the low-level server (see `content.py`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import mcp_types as types
from mcp.shared.exceptions import MCPError

from .content import PromptSpec, ResourceSpec, render_text
from .visible import strip_data, strip_invisible

if TYPE_CHECKING:
    from .catalog import Catalog

__all__ = ["RESOURCE_NOT_FOUND", "ContentHandlers", "content_handlers"]

RESOURCE_NOT_FOUND = -32002  # the MCP spec's code for resources/read of an unknown URI

# The server's resources/read door (`server._Runtime.read_resource`: the gate, the upstream).
Read = Callable[[ResourceSpec, str, Mapping[str, str]], Awaitable[types.ReadResourceResult]]


def content_handlers(catalog: Catalog, read: Read) -> dict[str, Any]:
    """The low-level `Server`'s resources/* and prompts/* handlers, only for what the catalog
    has: a server without resources or prompts does not announce those capabilities.
    Everything listed is without invisible characters (runtime/visible.py)."""
    handlers = ContentHandlers(catalog.resources, catalog.prompts, read)
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
        read: Read,
    ) -> None:
        self._resources = tuple(resources)
        self._prompts = {prompt.name: prompt for prompt in prompts}
        self._read_door = read

    async def list_resources(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return _visible(
            types.ListResourcesResult,
            types.ListResourcesResult(
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
            ),
        )

    async def list_resource_templates(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return _visible(
            types.ListResourceTemplatesResult,
            types.ListResourceTemplatesResult(
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
            ),
        )

    async def read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        for resource in self._resources:
            variables = resource.match(uri)
            if variables is not None:
                return await self._read(resource, uri, variables)
        raise MCPError(
            code=RESOURCE_NOT_FOUND, message=f"Resource not found: {strip_invisible(uri)}"
        )

    async def _read(
        self, resource: ResourceSpec, uri: str, variables: dict[str, str]
    ) -> types.ReadResourceResult:
        return await self._read_door(resource, uri, variables)

    async def list_prompts(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return _visible(
            types.ListPromptsResult,
            types.ListPromptsResult(
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
            ),
        )

    async def get_prompt(
        self, ctx: Any, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        prompt = self._prompts.get(params.name)
        if prompt is None:
            raise MCPError(
                code=types.INVALID_PARAMS, message=f"Unknown prompt: {strip_invisible(params.name)}"
            )
        values = dict(params.arguments or {})
        declared = {a.name for a in prompt.arguments}
        unknown = sorted(set(values) - declared)
        missing = [a.name for a in prompt.arguments if a.required and not values.get(a.name)]
        if unknown or missing:
            problems = [f"unknown argument {n!r}" for n in unknown]
            problems += [f"missing required argument {n!r}" for n in missing]
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=strip_invisible(f"Prompt {prompt.name}: " + "; ".join(problems)),
            )
        return _visible(
            types.GetPromptResult,
            types.GetPromptResult(
                description=prompt.description or None,
                messages=[
                    types.PromptMessage(
                        role=role,  # type: ignore[arg-type]
                        content=types.TextContent(type="text", text=render_text(text, values)),
                    )
                    for role, text in prompt.messages
                ],
            ),
        )


_R = TypeVar("_R", bound=types.Result)


def _visible(kind: type[_R], result: _R) -> _R:
    """`result` with every string without invisible characters (S20)."""
    return kind.model_validate(strip_data(result.model_dump(by_alias=True, exclude_none=True)))
