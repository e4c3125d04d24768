"""G16 at the command line: where a spec's `servers` point, checked when generating."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import httpx2
import pytest
from mcp import Client

from mcpmint.runtime.catalog import load_catalog
from mcpmint.runtime.server import build_server

from .support import mcpmint

SPEC = """\
openapi: 3.0.3
info: {{title: Geo, version: "1"}}
servers:
{servers}
paths:
  /items:
    get:
      operationId: listItems
      responses: {{"200": {{description: ok}}}}
"""


def write_spec(tmp_path: Path, servers: str) -> Path:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(servers=textwrap.indent(textwrap.dedent(servers), "  ")))
    return spec


METADATA = {
    "aws": ("- url: http://169.254.169.254/latest\n", "4:5", "169.254.169.254"),
    "aws-ipv6": ("- url: http://[fd00:ec2::254]/latest\n", "4:5", "fd00:ec2::254"),
    "gcp": ("- url: http://metadata.google.internal/v1\n", "4:5", "metadata.google.internal"),
    "decimal": ("- url: http://2852039166/latest\n", "4:5", "2852039166"),
    "second-server": (
        "- url: https://api.example.com\n- url: https://169.254.169.254/\n",
        "5:5",
        "169.254.169.254",
    ),
    "enum-value": (
        """\
        - url: https://{host}/v1
          variables:
            host: {default: api.example.com, enum: [api.example.com, 169.254.169.254]}
        """,
        "4:5",
        "169.254.169.254",
    ),
}


@pytest.mark.parametrize("case", sorted(METADATA))
def test_G16_a_server_at_a_metadata_address_stops_generate_with_a_located_error(
    case: str, tmp_path: Path
) -> None:
    servers, location, host = METADATA[case]
    spec = write_spec(tmp_path, servers)
    out = tmp_path / "out"
    code, stdout, stderr = mcpmint("generate", str(spec), "-o", str(out))
    assert code == 2, stdout + stderr
    assert f"{spec}:{location}: error: server URL" in stderr, stderr
    assert f"cloud metadata address ({host})" in stderr
    assert "hint: remove or replace this server" in stderr
    assert "Traceback" not in stdout + stderr
    assert not out.exists()


def test_G16_plain_http_and_a_free_form_host_are_located_warnings(tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path,
        """\
        - url: https://{region}.api.example.com/{version}
          variables:
            region: {default: eu, enum: [eu, us]}
            version: {default: v1}
        - url: http://{host}/v1
          variables:
            host: {default: example.com}
        - url: http://169.254.10.1/
        """,
    )
    out = tmp_path / "out"
    code, stdout, stderr = mcpmint("generate", str(spec), "-o", str(out))
    assert code == 0, stdout + stderr
    assert f"{spec}:10:7: warning: server variable 'host' is free-form and chooses the host" in (
        stderr
    )
    assert "GEO_SERVER_HOST" in stderr
    assert f"{spec}:8:5: warning: server URL 'http://example.com/v1' is plain http://" in stderr
    assert f"{spec}:11:5: warning: server URL 'http://169.254.10.1/' points at a link-local" in (
        stderr
    )
    # The chosen server keeps its variables, for the operator to set at run time only.
    tools = json.loads((out / "src/geo_mcp/_generated/tools.json").read_text())
    assert tools["upstream"] == {
        "baseUrl": "https://eu.api.example.com/v1",
        "timeoutSeconds": 30.0,
        "urlTemplate": "https://{region}.api.example.com/{version}",
        "variables": {
            "region": {"default": "eu", "enum": ["eu", "us"]},
            "version": {"default": "v1"},
        },
    }
    reference = (out / "REFERENCE.md").read_text()
    assert "`GEO_SERVER_REGION` | server URL variable `region`: one of `eu`, `us`" in reference


def test_G16_loopback_http_and_https_servers_give_no_server_warning(tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path, "- url: http://127.0.0.1:8765/v2\n- url: http://localhost/v2\n- url: https://a.b/"
    )
    code, stdout, stderr = mcpmint("validate", str(spec))
    assert code == 0, stdout + stderr
    assert "server URL" not in stderr and "server variable" not in stderr


@pytest.mark.anyio
async def test_G16_the_generated_server_takes_server_variables_only_from_their_enum(
    tmp_path: Path,
) -> None:
    spec = write_spec(
        tmp_path,
        """\
        - url: https://{region}.api.example.com/v1
          variables:
            region: {default: eu, enum: [eu, us]}
        """,
    )
    out = tmp_path / "out"
    code, stdout, stderr = mcpmint("generate", str(spec), "-o", str(out))
    assert code == 0, stdout + stderr
    catalog = load_catalog(json.loads((out / "src/geo_mcp/_generated/tools.json").read_text()))
    hosts: list[str] = []

    def respond(request: httpx2.Request) -> httpx2.Response:
        hosts.append(request.url.host)
        return httpx2.Response(200, json={})

    transport = httpx2.MockTransport(respond)
    for env, ok in (
        ({}, True),
        ({"GEO_SERVER_REGION": "us"}, True),
        ({"GEO_SERVER_REGION": "evil.com#"}, False),
    ):
        server = build_server(catalog, transport=transport, environ={"GEO_AUDIT": "off", **env})
        async with Client(server) as client:
            result = await client.call_tool("geo_list_items", {})
        assert result.is_error is not ok, result
    assert hosts == ["eu.api.example.com", "us.api.example.com"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_S23_a_server_host_spelled_as_an_odd_ip_literal_stops_generate(tmp_path: Path) -> None:
    hosts = [
        "0x7f000001:9101",  # hex: loopback
        "0177.0.0.1",  # octal
        "127.1",  # short dotted
        "10.1.513",  # short dotted, private
        "167772161",  # a bare integer (10.0.0.1)
        "\uff11\uff10.0.0.1",  # full-width digits
        "[::ffff:10.0.0.1]",  # IPv4 inside IPv6
        "0xa9fea9fe",  # hex, the metadata address: the metadata error
    ]
    servers = "".join(f"- url: https://{host}/v1\n" for host in hosts)
    spec = write_spec(tmp_path, servers)
    out = tmp_path / "out"
    code, stdout, stderr = mcpmint("generate", str(spec), "-o", str(out))
    assert code == 2, stdout + stderr
    for line, _ in enumerate(hosts[:-1], start=4):
        assert f"{spec}:{line}:5: error: server URL" in stderr, (line, stderr)
    assert stderr.count("non-canonical form") == len(hosts) - 1
    assert "cloud metadata address (0xa9fea9fe)" in stderr
    assert "Traceback" not in stdout + stderr
    assert not out.exists()


def test_S23_canonical_literals_and_names_pass(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, "- url: https://10.0.0.1/v1\n- url: https://api.example.com\n")
    code, stdout, stderr = mcpmint("generate", str(spec), "-o", str(tmp_path / "out"))
    assert code == 0, stdout + stderr
    assert "non-canonical" not in stderr
