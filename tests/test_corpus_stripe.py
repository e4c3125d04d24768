"""Stripe's form bodies (issue 7), from the generated server to a recording upstream.

Prism cannot load Stripe's spec (its 92-schema reference cycle kept Prism starting for over
five minutes), so the server built from the corpus's stripe.yaml runs in process and its base
URL points at a plain HTTP server on loopback that records every request. A few write tools are
called, each confirmed through elicitation, and the bodies must be exactly the encodings
Stripe documents (https://docs.stripe.com/api, "form-encoded request bodies"):
`metadata[key]=value`, `items[0][price]=...`, `expand[]=...`, written out below.

The server is what a generated package runs: the tools.json of the package that
tests/test_corpus.py generates from stripe.yaml (once per session: it takes minutes), served by
the runtime that is copied verbatim into every package.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import mcp_types as types
import pytest
from mcp import Client
from mcp.client import ClientRequestContext

from mcpmint.runtime.catalog import Catalog, load_catalog
from mcpmint.runtime.server import build_server

from .conftest import CORPUS
from .test_corpus import CorpusRuns

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.skipif(not (CORPUS / "stripe.yaml").exists(), reason="no shared corpus"),
]
FORM = "application/x-www-form-urlencoded"


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class Recorder(BaseHTTPRequestHandler):
    """Answers every request with a small Stripe-like JSON object and records it."""

    requests: ClassVar[list[Recorded]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        headers = {k.lower(): v for k, v in self.headers.items()}
        Recorder.requests.append(Recorded("POST", self.path, headers, body))
        answer = json.dumps({"id": "obj_1", "object": "thing"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def stripe_catalog(corpus_runs: CorpusRuns) -> Catalog:
    """The catalog of the package generated from stripe.yaml (its tools.json), generated once
    per session with tests/test_corpus.py's run."""
    run = corpus_runs.get("stripe")
    assert run.done.returncode == 0, run.done.stderr[-4000:]
    (tools,) = run.out.glob("src/*_mcp/_generated/tools.json")
    return load_catalog(json.loads(tools.read_text(encoding="utf-8")))


@pytest.fixture
def upstream() -> Iterator[str]:
    Recorder.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def accept(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"confirm": True})


# tool -> (arguments, the exact form body Stripe documents for them)
CALLS: dict[str, tuple[dict[str, Any], str]] = {
    "stripe_post_customers": (
        {"email": "jenny@example.com", "metadata": {"key": "value"}, "expand": ["tax"]},
        "email=jenny%40example.com&expand[]=tax&metadata[key]=value",
    ),
    "stripe_post_subscriptions": (
        {
            "customer": "cus_123",
            "items": [{"price": "price_123"}, {"price": "price_456", "quantity": 2}],
            "expand": ["latest_invoice.payment_intent"],
            "metadata": {"order_id": "6735"},
        },
        "customer=cus_123&expand[]=latest_invoice.payment_intent"
        "&items[0][price]=price_123&items[1][price]=price_456&items[1][quantity]=2"
        "&metadata[order_id]=6735",
    ),
    "stripe_post_payment_intents": (
        {
            "amount": 2000,
            "currency": "usd",
            "automatic_payment_methods": {"enabled": True},
            "payment_method_types": ["card", "link"],
        },
        "amount=2000&automatic_payment_methods[enabled]=true&currency=usd"
        "&payment_method_types[]=card&payment_method_types[]=link",
    ),
    "stripe_post_checkout_sessions": (
        {
            "mode": "payment",
            "success_url": "https://example.com/success",
            "line_items": [
                {
                    "quantity": 1,
                    "price_data": {
                        "currency": "usd",
                        "unit_amount": 2000,
                        "product_data": {"name": "T-shirt"},
                    },
                }
            ],
        },
        # Top-level fields in argument-name order; inside one, keys in the order given.
        "line_items[0][quantity]=1&line_items[0][price_data][currency]=usd"
        "&line_items[0][price_data][unit_amount]=2000"
        "&line_items[0][price_data][product_data][name]=T-shirt"
        "&mode=payment&success_url=https%3A%2F%2Fexample.com%2Fsuccess",
    ),
}


async def test_stripe_write_tools_send_the_form_bodies_stripe_documents(
    stripe_catalog: Catalog, upstream: str
) -> None:
    environ = {"STRIPE_BASE_URL": upstream, "STRIPE_RETRIES": "0"}
    for scheme in stripe_catalog.security_schemes.values():
        for variable in scheme.env.values():
            environ[variable] = "sk_test_123"
    server = build_server(stripe_catalog, environ=environ)
    results: dict[str, str] = {}
    async with Client(server, elicitation_callback=accept) as client:
        for tool, (arguments, _) in CALLS.items():
            result = await client.call_tool(tool, arguments)
            text = " ".join(c.text for c in result.content if isinstance(c, types.TextContent))
            results[tool] = "" if not result.is_error else text[:400]

    assert results == dict.fromkeys(CALLS, "")
    sent = {r.path: r for r in Recorder.requests}
    assert sorted(sent) == [
        "/v1/checkout/sessions",
        "/v1/customers",
        "/v1/payment_intents",
        "/v1/subscriptions",
    ]
    paths = {
        "stripe_post_customers": "/v1/customers",
        "stripe_post_subscriptions": "/v1/subscriptions",
        "stripe_post_payment_intents": "/v1/payment_intents",
        "stripe_post_checkout_sessions": "/v1/checkout/sessions",
    }
    for tool, (_, body) in CALLS.items():
        request = sent[paths[tool]]
        assert request.headers["content-type"] == FORM, tool
        assert request.headers["authorization"].startswith(("Basic ", "Bearer ")), tool
        assert request.body.decode() == body, tool
