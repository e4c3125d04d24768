"""Your own tests. mcpmint wrote this file once and never changes it."""

import anyio
from mcp import Client

from styles_mcp.server import build_server


def test_the_server_lists_tools() -> None:
    async def list_names() -> list[str]:
        async with Client(build_server()) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    assert anyio.run(list_names)
