"""The load stage: safe YAML/JSON reading, limits, locations and multi-file `$ref` bundling."""

from __future__ import annotations

import builtins
import json
import os
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcpmint import refs
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.load.document import MOUNT_KEY, Limits, RawDocument, load_document

from .conftest import CORPUS, REPO, corpus_rows

INVALID = REPO / "specs" / "invalid"

# A small valid spec whose only `$ref` sits at line 14, column 17.
REF_SPEC = """\
openapi: 3.0.3
info:
  title: t
  version: "1"
paths:
  /pets:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                $ref: '{ref}'
"""
REF_AT = "14:17"


def load(path: Path, limits: Limits | None = None) -> tuple[RawDocument | None, DiagnosticSink]:
    sink = DiagnosticSink()
    return load_document(path, sink, limits or Limits()), sink


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def only_error(sink: DiagnosticSink) -> tuple[str, str]:
    assert len(sink.errors) == 1, [d.render() for d in sink]
    return sink.errors[0].location, sink.errors[0].message


def only_warning(sink: DiagnosticSink) -> tuple[str, str]:
    assert sink.errors == [], [d.render() for d in sink]
    assert len(sink.warnings) == 1, [d.render() for d in sink]
    return sink.warnings[0].location, sink.warnings[0].message


def placeholder_of(document: RawDocument | None, pointer: str) -> dict[str, Any]:
    """The placeholder the `$ref` at `pointer` was rewritten to point at."""
    assert document is not None
    node = refs.resolve_pointer(document.data, pointer)
    target = node["$ref"]
    assert target.startswith(f"#/{refs.UNRESOLVED_KEY}/"), target
    placeholder = refs.resolve_pointer(document.data, target)
    assert isinstance(placeholder, dict)
    return placeholder


SCHEMA_AT = "#/paths/~1pets/get/responses/200/content/application~1json/schema"


def all_refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from all_refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from all_refs(value)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records the real path of every file opened through `open()`."""
    paths: list[str] = []
    real_open = builtins.open

    def recording_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | os.PathLike):
            paths.append(os.path.realpath(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", recording_open)
    return paths


# ---------------------------------------------------------------------- G1: YAML syntax
def test_G1_yaml_syntax_error_is_located(tmp_path: Path) -> None:
    spec = write(tmp_path / "spec.yaml", 'openapi: 3.0.3\ninfo:\n\ttitle: t\n  version: "1"\n')

    document, sink = load(spec)

    assert document is None
    location, message = only_error(sink)
    assert location == f"{spec.as_posix()}:3:1"
    assert message.startswith("YAML syntax error: found character that cannot start any token")


def test_yaml_bad_indentation_is_located_at_the_problem(tmp_path: Path) -> None:
    spec = write(tmp_path / "spec.yaml", "openapi: 3.0.3\ninfo:\n  title: t\n   version: x\n")

    document, sink = load(spec)

    assert document is None
    assert only_error(sink)[0] == f"{spec.as_posix()}:4:11"


def test_more_than_one_yaml_document_is_an_error(tmp_path: Path) -> None:
    spec = write(tmp_path / "spec.yaml", "openapi: 3.0.3\n---\nopenapi: 3.1.0\n")

    document, sink = load(spec)

    assert document is None
    assert "single document" in only_error(sink)[1]


# ---------------------------------------------------------------------- G2: unsafe tags
G2_PAYLOADS = [
    '!!python/object/apply:builtins.open ["{marker}", "w"]',
    '!!python/object/apply:os.system ["touch {marker}"]',
    '!!python/object/new:builtins.open ["{marker}", "w"]',
]


@pytest.mark.parametrize("payload", G2_PAYLOADS)
def test_G2_python_tag_is_refused_and_nothing_runs(tmp_path: Path, payload: str) -> None:
    marker = tmp_path / "pwned"
    spec = write(
        tmp_path / "spec.yaml",
        f"openapi: 3.0.3\nx-run: {payload.format(marker=marker.as_posix())}\n",
    )

    document, sink = load(spec)

    assert document is None
    location, message = only_error(sink)
    assert location == f"{spec.as_posix()}:2:8"
    assert message.startswith("YAML tag !!python/object/")
    assert not marker.exists()


def test_G2_payload_is_live_under_an_unsafe_loader(tmp_path: Path) -> None:
    # Proves the G2 test can fail: the same payload does create the file when constructed.
    marker = tmp_path / "pwned"
    text = "x: " + G2_PAYLOADS[0].format(marker=marker.as_posix())

    yaml.unsafe_load(text)["x"].close()

    assert marker.exists()


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ("x: !!python/name:os.system\n", "!!python/name:os.system"),
        ("? !!python/name:os.getcwd\n: x\n", "!!python/name:os.getcwd"),
        ("x: !custom {a: 1}\n", "!custom"),
        ("x: !!set {a, b}\n", "!!set"),
    ],
)
def test_non_standard_yaml_tags_are_refused(tmp_path: Path, text: str, tag: str) -> None:
    spec = write(tmp_path / "spec.yaml", text)

    document, sink = load(spec)

    assert document is None
    assert only_error(sink)[1] == f"YAML tag {tag} is not allowed"


# ---------------------------------------------------------------------- G3: limits
def test_G3_alias_bomb_rejected_before_expansion() -> None:
    tracemalloc.start()
    try:
        document, sink = load(INVALID / "billion-laughs.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert document is None
    location, message = only_error(sink)
    assert location.endswith("billion-laughs.yaml:20:6")  # the level that passed the limit
    assert "(max_nodes)" in message
    # 9**9 expanded strings would need gigabytes; measuring the graph needs almost nothing.
    assert peak < 10 * 1024 * 1024


def test_G3_oversized_file_rejected_by_size(tmp_path: Path, opened: list[str]) -> None:
    # Tabs are not valid YAML: had the file been parsed, a syntax error would show instead.
    spec = write(tmp_path / "spec.yaml", "\t" * 2000)

    document, sink = load(spec, Limits(max_bytes=1000))

    assert document is None
    location, message = only_error(sink)
    assert location == spec.as_posix()
    assert message == "file is 2000 bytes, more than the limit of 1000 (max_bytes)"
    assert os.path.realpath(spec) not in opened


def test_G3_files_together_over_the_byte_limit_are_rejected(tmp_path: Path) -> None:
    spec = write(tmp_path / "spec.yaml", REF_SPEC.format(ref="big.yaml#/A") + "#" * 200 + "\n")
    write(tmp_path / "big.yaml", "A: {type: string}\n" + "#" * 600 + "\n")

    document, sink = load(spec, Limits(max_bytes=1000))

    assert document is None
    assert "together exceed 1000 bytes (max_bytes)" in only_error(sink)[1]


def test_yaml_aliases_over_the_limit_are_rejected(tmp_path: Path) -> None:
    spec = write(tmp_path / "spec.yaml", "a: &a {type: string}\nb: [*a, *a, *a, *a]\n")

    assert load(spec, Limits(max_aliases=4))[0] is not None
    document, sink = load(spec, Limits(max_aliases=3))

    assert document is None
    assert only_error(sink)[1] == "more than 3 YAML aliases (max_aliases)"


def test_aliased_values_count_toward_the_node_limit(tmp_path: Path) -> None:
    # 1 root + 2 keys + 2 lists of 1 + 4x4 (a mapping of one key/value pair, aliased 4 times)
    spec = write(tmp_path / "spec.yaml", "a: &a [{k: v}]\nb: [*a, *a, *a, *a]\n")

    assert load(spec, Limits(max_nodes=30))[0] is not None
    document, sink = load(spec, Limits(max_nodes=20))

    assert document is None
    assert "(max_nodes)" in only_error(sink)[1]


def test_recursive_yaml_alias_is_rejected(tmp_path: Path) -> None:
    spec = write(tmp_path / "spec.yaml", "openapi: 3.0.3\nx: &a [1, *a]\n")

    document, sink = load(spec)

    assert document is None
    assert only_error(sink)[1].startswith("recursive YAML alias")


@pytest.mark.parametrize("suffix", ["yaml", "json"])
def test_nesting_deeper_than_the_limit_is_rejected(tmp_path: Path, suffix: str) -> None:
    spec = write(tmp_path / f"spec.{suffix}", '{"a": ' + "[" * 5 + "]" * 5 + "}")

    assert load(spec, Limits(max_depth=6))[0] is not None
    document, sink = load(spec, Limits(max_depth=5))

    assert document is None
    assert only_error(sink)[1] == "nested deeper than 5 levels (max_depth)"


def test_yaml_alias_reaching_past_the_depth_limit_is_rejected(tmp_path: Path) -> None:
    spec = write(tmp_path / "spec.yaml", "a: &a [[[1]]]\nb: [[[*a]]]\n")

    assert load(spec, Limits(max_depth=7))[0] is not None
    document, sink = load(spec, Limits(max_depth=6))

    assert document is None
    assert "(max_depth)" in only_error(sink)[1]


@pytest.mark.parametrize("suffix", ["yaml", "json"])
def test_absurdly_deep_nesting_is_an_error_not_a_crash(tmp_path: Path, suffix: str) -> None:
    spec = write(tmp_path / f"spec.{suffix}", "[" * 100_000 + "]" * 100_000)

    document, sink = load(spec)

    assert document is None
    assert len(sink.errors) == 1


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.yaml")
    spec = write(tmp_path / "spec.yaml", REF_SPEC.format(ref="pipe.yaml"))

    document, sink = load(spec)

    assert document is None
    assert only_error(sink) == (
        f"{spec.as_posix()}:{REF_AT}",
        f"{tmp_path.as_posix()}/pipe.yaml is not a regular file",
    )


def test_non_utf8_bytes_are_located(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_bytes(b"openapi: 3.0.3\ninfo: caf\xe9\n")

    document, sink = load(spec)

    assert document is None
    assert only_error(sink) == (
        f"{spec.as_posix()}:2:10",
        "the file is not valid UTF-8 (byte 0xe9)",
    )


# ---------------------------------------------------------------------- values
def test_yaml_values_become_plain_json_values(tmp_path: Path) -> None:
    spec = write(
        tmp_path / "spec.yaml",
        "openapi: 3.0.3\n"
        "x-keys: {200: a, true: b, 1.5: c, null: d}\n"
        "x-date: 2024-01-02\n"
        "x-time: 2001-12-14t21:59:43.10-05:00\n"
        "x-numbers: [0x1F, 1_000, .inf, ~, yes]\n"
        "x-base: &base {a: 1, b: 2}\n"
        "x-extra: &extra {c: 3, a: 9}\n"
        "x-merged:\n  <<: [*base, *extra]\n  b: 20\n",
    )

    document, sink = load(spec)

    assert document is not None, [d.render() for d in sink]
    data = document.data
    assert data["x-keys"] == {"200": "a", "true": "b", "1.5": "c", "null": "d"}
    assert data["x-date"] == "2024-01-02"
    assert data["x-time"] == "2001-12-14t21:59:43.10-05:00"
    assert data["x-numbers"] == [31, 1000, float("inf"), None, True]
    assert data["x-merged"] == {"a": 1, "b": 20, "c": 3}
    json.dumps(data)  # nothing that JSON cannot hold


def test_duplicate_yaml_key_warns_and_the_last_value_wins(tmp_path: Path) -> None:
    spec = write(tmp_path / "spec.yaml", "openapi: 3.0.3\ninfo:\n  title: a\n  title: b\n")

    document, sink = load(spec)

    assert document is not None
    assert document.data["info"] == {"title": "b"}
    assert [(d.location, d.message) for d in sink.warnings] == [
        (f"{spec.as_posix()}:4:3", "duplicate key 'title': the last value wins")
    ]


def test_duplicate_json_key_warns_at_its_pointer(tmp_path: Path) -> None:
    spec = write(tmp_path / "spec.json", '{"info": {"title": "a", "title": "b"}}')

    document, sink = load(spec)

    assert document is not None
    assert document.data["info"] == {"title": "b"}
    assert [d.location for d in sink.warnings] == [f"{spec.as_posix()}#/info/title"]


def test_json_duplicate_keys_and_broken_refs_are_reported_in_document_order(
    tmp_path: Path,
) -> None:
    """One walk of a JSON document checks it and finds its `$ref`s, depth first in document
    order: the warnings come in the order a reader meets them."""
    text = json.dumps(
        {
            "openapi": "3.0.3",
            "paths": {
                "/a": {"get": {"responses": {"200": {"$ref": "#/nope/first"}}}},
                "/b": {"get": {"responses": {"200": {"$ref": "#/nope/second"}}}},
            },
            "components": {"schemas": {"A": {"$ref": "#/nope/third"}}},
        }
    )
    text = text.replace('"openapi"', '"x-one": 1, "x-one": 2, "openapi"', 1)
    text = text.replace('"/a": {', '"/a": {"x-two": 1, "x-two": 2, ', 1)
    text = text.replace('"/b": {', '"/b": {"x-three": 1, "x-three": 2, ', 1)
    spec = write(tmp_path / "spec.json", text)

    document, sink = load(spec)

    assert document is not None
    found = [(d.location.split("#")[-1], d.message.split(":")[0]) for d in sink.warnings]
    assert found == [
        ("/x-one", "duplicate key 'x-one'"),
        ("/paths/~1a/x-two", "duplicate key 'x-two'"),
        ("/paths/~1b/x-three", "duplicate key 'x-three'"),
        ("/paths/~1a/get/responses/200/$ref", "broken $ref '#/nope/first'"),
        ("/paths/~1b/get/responses/200/$ref", "broken $ref '#/nope/second'"),
        ("/components/schemas/A/$ref", "broken $ref '#/nope/third'"),
    ]


def test_top_level_that_is_not_a_mapping_is_an_error(tmp_path: Path) -> None:
    spec = write(tmp_path / "spec.yaml", "- openapi: 3.0.3\n")

    document, sink = load(spec)

    assert document is None
    assert only_error(sink) == (
        f"{spec.as_posix()}:1:1",
        "not an OpenAPI document: the top level is a list",
    )


def test_empty_or_missing_entry_file_is_an_error_not_a_crash(tmp_path: Path) -> None:
    empty = write(tmp_path / "empty.yaml", "# nothing here\n")

    _, empty_sink = load(empty)
    _, missing_sink = load(tmp_path / "missing.yaml")

    assert only_error(empty_sink) == (
        empty.as_posix(),
        "not an OpenAPI document: the file is empty",
    )
    assert only_error(missing_sink) == (
        (tmp_path / "missing.yaml").as_posix(),
        f"cannot read {tmp_path.as_posix()}/missing.yaml: No such file or directory",
    )


def test_the_bundle_key_is_reserved(tmp_path: Path) -> None:
    spec = write(tmp_path / "spec.yaml", f"openapi: 3.0.3\n{MOUNT_KEY}: {{}}\n")

    document, sink = load(spec)

    assert document is None
    assert only_error(sink)[0] == f"{spec.as_posix()}:2:1"


# ---------------------------------------------------------------------- locations
def test_yaml_locations_point_at_keys_and_fall_back_to_the_nearest_ancestor(
    tmp_path: Path,
) -> None:
    spec = write(tmp_path / "spec.yaml", REF_SPEC.format(ref="#/paths"))

    document, _ = load(spec)

    assert document is not None
    where = spec.as_posix()
    assert document.locate("#") == f"{where}:1:1"
    assert document.locate("#/paths/~1pets/get") == f"{where}:7:5"
    assert document.locate("#/paths/~1pets/get/responses/200") == f"{where}:9:9"
    assert document.locate("#/paths/~1pets/get/nope/deeper") == f"{where}:7:5"
    assert document.locate("/info/version") == f"{where}:4:3"


def test_json_locations_are_pointers_and_syntax_errors_are_line_col(tmp_path: Path) -> None:
    spec = write(tmp_path / "spec.json", json.dumps({"openapi": "3.0.3", "paths": {"/a": {}}}))
    broken = write(tmp_path / "broken.json", '{\n  "openapi": "3.0.3",\n  "info": }\n')

    document, _ = load(spec)
    nothing, sink = load(broken)

    assert document is not None
    assert document.locate("#/paths/~1a") == f"{spec.as_posix()}#/paths/~1a"
    assert nothing is None
    assert only_error(sink) == (f"{broken.as_posix()}:3:11", "JSON syntax error: Expecting value")


def test_broken_local_pointer_in_json_is_a_warning_located_at_its_ref(tmp_path: Path) -> None:
    schema = {"$ref": "#/components/schemas/Nope"}
    spec = write(tmp_path / "spec.json", json.dumps({"paths": {"/a": {"get": schema}}}))

    document, sink = load(spec)

    location, message = only_warning(sink)
    assert location == f"{spec.as_posix()}#/paths/~1a/get/$ref"
    assert message.startswith("broken $ref '#/components/schemas/Nope'")
    assert refs.unresolved(placeholder_of(document, "#/paths/~1a/get")) is not None


def test_json_content_in_a_yaml_file_is_read_as_json(tmp_path: Path) -> None:
    spec = write(tmp_path / "spec.yaml", '{"openapi": "3.0.3"}')
    flow = write(tmp_path / "flow.yaml", "{openapi: 3.0.3}")

    document, _ = load(spec)
    flow_document, _ = load(flow)

    assert document is not None and flow_document is not None
    assert document.locate("#/openapi") == f"{spec.as_posix()}#/openapi"
    assert flow_document.data == {"openapi": "3.0.3"}
    assert flow_document.locate("#/openapi") == f"{flow.as_posix()}:1:2"


# ---------------------------------------------------------------------- G6: outside the root
@pytest.mark.parametrize(
    "ref",
    [
        "../" * 40 + "etc/passwd",  # as many `..` as it takes to reach `/`
        "file:///etc/passwd",
        "FILE:/etc/passwd",
        "/etc/passwd",
        "sub/../../outside.yaml#/A",
        "%2e%2e/outside.yaml#/A",
    ],
)
def test_G6_ref_outside_the_spec_folder_is_never_read(
    tmp_path: Path, ref: str, opened: list[str]
) -> None:
    # Never read, whether the file exists or not (no answer tells which): a warning and an
    # unknown schema, as for a network `$ref`; an operation that needs it is left out.
    write(tmp_path / "outside.yaml", "A: {type: string}\n")
    spec = write(tmp_path / "spec" / "openapi.yaml", REF_SPEC.format(ref=ref))

    document, sink = load(spec)

    assert document is not None
    location, message = only_warning(sink)
    assert location == f"{spec.as_posix()}:{REF_AT}"
    assert message == (
        f"$ref {ref!r} points outside the spec folder; not read; read as an unknown schema "
        "that accepts any value"
    )
    assert opened == [os.path.realpath(spec)]


def test_G6_ref_outside_the_spec_folder_to_nothing_says_the_same(
    tmp_path: Path, opened: list[str]
) -> None:
    # It dangles in the original too (a file of the provider's repository not published).
    spec = write(tmp_path / "spec" / "openapi.yaml", REF_SPEC.format(ref="../gone.yaml#/A"))

    document, sink = load(spec)

    assert document is not None
    assert only_warning(sink)[1] == (
        "$ref '../gone.yaml#/A' points outside the spec folder; not read; read as an unknown "
        "schema that accepts any value"
    )
    assert opened == [os.path.realpath(spec)]


@pytest.mark.parametrize("ref", ["link.yaml#/A", "linked-dir/secret.yaml#/A"])
def test_G6_symlink_escaping_the_spec_folder_is_never_read(
    tmp_path: Path, ref: str, opened: list[str]
) -> None:
    secret = write(tmp_path / "outside" / "secret.yaml", "A: {type: string}\n")
    spec = write(tmp_path / "spec" / "openapi.yaml", REF_SPEC.format(ref=ref))
    (tmp_path / "spec" / "link.yaml").symlink_to(secret)
    (tmp_path / "spec" / "linked-dir").symlink_to(secret.parent, target_is_directory=True)

    document, sink = load(spec)

    assert document is not None
    assert only_warning(sink)[1].startswith(f"$ref {ref!r} points outside the spec folder")
    assert os.path.realpath(secret) not in opened


def test_symlink_inside_the_spec_folder_is_followed(tmp_path: Path) -> None:
    write(tmp_path / "schemas" / "pet.yaml", "Pet: {type: object}\n")
    (tmp_path / "pet-link.yaml").symlink_to(tmp_path / "schemas" / "pet.yaml")
    spec = write(tmp_path / "openapi.yaml", REF_SPEC.format(ref="pet-link.yaml#/Pet"))

    document, sink = load(spec)

    assert document is not None, [d.render() for d in sink]
    assert list(document.data[MOUNT_KEY]) == ["schemas/pet.yaml"]


def test_a_wider_root_can_be_given_explicitly(tmp_path: Path) -> None:
    write(tmp_path / "common" / "error.yaml", "Error: {type: object}\n")
    spec = write(tmp_path / "spec" / "openapi.yaml", REF_SPEC.format(ref="../common/error.yaml"))
    sink = DiagnosticSink()

    document = load_document(spec, sink, root=tmp_path)

    assert document is not None, [d.render() for d in sink]
    assert document.root == Path(os.path.realpath(tmp_path))
    assert list(document.data[MOUNT_KEY]) == ["common/error.yaml"]


# ---------------------------------------------------------------------- G7: network
@pytest.mark.parametrize(
    "ref",
    [
        "http://169.254.169.254/latest/meta-data/",
        "https://example.com/pet.yaml#/Pet",
        "ftp://example.com/pet.yaml",
        "//example.com/pet.yaml",
        "urn:example:pet",
    ],
)
def test_G7_network_ref_is_never_fetched_and_degrades_to_an_unknown_schema_with_a_warning(
    tmp_path: Path, ref: str, no_network: list[tuple[Any, ...]]
) -> None:
    spec = write(tmp_path / "openapi.yaml", REF_SPEC.format(ref=ref))

    document, sink = load(spec)

    location, message = only_warning(sink)
    assert location == f"{spec.as_posix()}:{REF_AT}"
    assert message == (
        f"network $ref not fetched: {ref!r}; read as an unknown schema that accepts any value"
    )
    placeholder = placeholder_of(document, SCHEMA_AT)
    assert placeholder["description"] == (
        f"Not described: the spec's $ref {ref!r} could not be resolved."
    )
    assert refs.unresolved(placeholder) == f"network $ref not fetched: {ref!r}"
    assert no_network == []


def test_G7_network_ref_in_a_referenced_file_is_located_in_that_file(
    tmp_path: Path, no_network: list[tuple[Any, ...]]
) -> None:
    pet = write(tmp_path / "pet.yaml", "Pet:\n  $ref: 'https://example.com/x.yaml'\n")
    spec = write(tmp_path / "openapi.yaml", REF_SPEC.format(ref="pet.yaml#/Pet"))

    document, sink = load(spec)

    assert document is not None
    assert only_warning(sink)[0] == f"{pet.as_posix()}:2:3"
    assert no_network == []


def test_the_same_broken_ref_used_twice_shares_one_placeholder(tmp_path: Path) -> None:
    spec = write(
        tmp_path / "openapi.yaml",
        REF_SPEC.format(ref="https://example.com/x.yaml#/Foo")
        + "components:\n  schemas:\n    A: {$ref: 'https://example.com/x.yaml#/Foo'}\n"
        "    B: {$ref: 'https://example.com/x.yaml#/Bar'}\n",
    )

    document, sink = load(spec)

    assert document is not None and sink.errors == []
    assert len(sink.warnings) == 3
    schemas = document.data["components"]["schemas"]
    assert schemas["A"]["$ref"] == placeholder_ref(document, SCHEMA_AT)
    assert schemas["B"]["$ref"] != schemas["A"]["$ref"]
    assert len(document.data[refs.UNRESOLVED_KEY]) == 2


def placeholder_ref(document: RawDocument, pointer: str) -> str:
    ref = refs.resolve_pointer(document.data, pointer)["$ref"]
    assert isinstance(ref, str)
    return ref


def test_the_placeholder_key_is_reserved_in_a_spec(tmp_path: Path) -> None:
    spec = write(
        tmp_path / "openapi.yaml", REF_SPEC.format(ref="#/paths") + "x-mcpmint-unresolved: {}\n"
    )

    document, sink = load(spec)

    assert document is None
    assert "`x-mcpmint-unresolved` is reserved" in only_error(sink)[1]


# ---------------------------------------------------------------------- multi-file
ENTRY = """\
openapi: 3.0.3
info:
  title: Multi-file
  version: "1"
paths:
  /pets:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                $ref: "schemas/pet.yaml#/Pet"
components:
  schemas:
    Codes:
      $ref: schemas/codes.json
    Local:
      type: string
"""
PET = """\
Pet:
  type: object
  properties:
    owner:
      $ref: "../common/owner.yaml#/Owner"
    tag:
      $ref: "#/Tag"
    local:
      $ref: "../openapi.yaml#/components/schemas/Local"
Tag:
  type: string
"""
OWNER = """\
Owner:
  type: object
  properties:
    pets:
      type: array
      items:
        $ref: "../schemas/pet.yaml#/Pet"
"""


@pytest.fixture
def multi_file_spec(tmp_path: Path) -> Path:
    write(tmp_path / "spec" / "schemas" / "pet.yaml", PET)
    write(tmp_path / "spec" / "schemas" / "codes.json", '{"type": "string", "enum": ["A"]}')
    write(tmp_path / "spec" / "common" / "owner.yaml", OWNER)
    return write(tmp_path / "spec" / "openapi.yaml", ENTRY)


def test_external_files_are_mounted_and_refs_rewritten_to_local_pointers(
    multi_file_spec: Path,
) -> None:
    document, sink = load(multi_file_spec)

    assert document is not None, [d.render() for d in sink]
    assert len(sink) == 0
    data = document.data
    mounts = data[MOUNT_KEY]
    assert list(mounts) == ["common/owner.yaml", "schemas/codes.json", "schemas/pet.yaml"]
    schema = data["paths"]["/pets"]["get"]["responses"]["200"]["content"]["application/json"]
    assert schema["schema"] == {"$ref": f"#/{MOUNT_KEY}/schemas~1pet.yaml/Pet"}
    assert data["components"]["schemas"]["Codes"] == {"$ref": f"#/{MOUNT_KEY}/schemas~1codes.json"}
    pet = mounts["schemas/pet.yaml"]["Pet"]["properties"]
    assert pet["owner"] == {"$ref": f"#/{MOUNT_KEY}/common~1owner.yaml/Owner"}
    assert pet["tag"] == {"$ref": f"#/{MOUNT_KEY}/schemas~1pet.yaml/Tag"}
    assert pet["local"] == {"$ref": "#/components/schemas/Local"}
    owner_items = mounts["common/owner.yaml"]["Owner"]["properties"]["pets"]["items"]
    assert owner_items == {"$ref": f"#/{MOUNT_KEY}/schemas~1pet.yaml/Pet"}
    assert mounts["schemas/codes.json"] == {"type": "string", "enum": ["A"]}


def test_every_bundled_ref_is_local_and_resolves(multi_file_spec: Path) -> None:
    document, _ = load(multi_file_spec)

    assert document is not None
    found = list(all_refs(document.data))
    assert len(found) == 6
    for ref in found:
        assert ref.startswith("#")
        refs.resolve_pointer(document.data, ref)


def test_cross_file_cycle_stays_a_reference(multi_file_spec: Path) -> None:
    document, _ = load(multi_file_spec)

    assert document is not None
    items_pointer = f"#/{MOUNT_KEY}/common~1owner.yaml/Owner/properties/pets/items"
    items = refs.resolve_pointer(document.data, items_pointer)
    pet, pet_pointer = refs.deref(document.data, items, items_pointer)
    assert pet_pointer == f"#/{MOUNT_KEY}/schemas~1pet.yaml/Pet"
    assert pet["properties"]["owner"] == {"$ref": f"#/{MOUNT_KEY}/common~1owner.yaml/Owner"}


def test_locations_inside_mounts_point_into_their_own_files(multi_file_spec: Path) -> None:
    document, _ = load(multi_file_spec)

    assert document is not None
    folder = multi_file_spec.parent.as_posix()
    pet = f"#/{MOUNT_KEY}/schemas~1pet.yaml/Pet"
    assert document.locate(f"{pet}/properties/tag") == f"{folder}/schemas/pet.yaml:6:5"
    assert document.locate(f"{pet}/properties/tag/$ref") == f"{folder}/schemas/pet.yaml:7:7"
    assert document.locate(f"#/{MOUNT_KEY}/common~1owner.yaml") == (
        f"{folder}/common/owner.yaml:1:1"
    )
    assert document.locate(f"#/{MOUNT_KEY}/schemas~1codes.json/enum") == (
        f"{folder}/schemas/codes.json#/enum"
    )
    assert document.locate("#/components/schemas/Codes") == f"{folder}/openapi.yaml:17:5"


def test_files_lists_the_entry_first_then_the_others_sorted(multi_file_spec: Path) -> None:
    document, _ = load(multi_file_spec)

    assert document is not None
    folder = multi_file_spec.parent
    assert document.files == (
        multi_file_spec,
        folder / "common" / "owner.yaml",
        folder / "schemas" / "codes.json",
        folder / "schemas" / "pet.yaml",
    )
    assert document.path == multi_file_spec
    assert document.root == Path(os.path.realpath(folder))


def test_loading_twice_gives_identical_documents(multi_file_spec: Path) -> None:
    first, _ = load(multi_file_spec)
    second, _ = load(multi_file_spec)

    assert first is not None and second is not None
    assert json.dumps(first.data) == json.dumps(second.data)
    assert first.files == second.files


def test_missing_external_file_is_a_warning_at_the_ref(tmp_path: Path) -> None:
    spec = write(tmp_path / "openapi.yaml", REF_SPEC.format(ref="schemas/nope.yaml#/Pet"))

    document, sink = load(spec)

    assert only_warning(sink) == (
        f"{spec.as_posix()}:{REF_AT}",
        f"$ref 'schemas/nope.yaml#/Pet': file {tmp_path.as_posix()}/schemas/nope.yaml "
        "does not exist; read as an unknown schema that accepts any value",
    )
    assert "Not described" in placeholder_of(document, SCHEMA_AT)["description"]


def test_broken_pointer_into_an_external_file_names_the_target(tmp_path: Path) -> None:
    write(tmp_path / "pet.yaml", "Pet: {type: object}\n")
    spec = write(tmp_path / "openapi.yaml", REF_SPEC.format(ref="pet.yaml#/Dog"))

    document, sink = load(spec)

    assert document is not None
    assert only_warning(sink) == (
        f"{spec.as_posix()}:{REF_AT}",
        f"broken $ref 'pet.yaml#/Dog': nothing at #/Dog in {tmp_path.as_posix()}/pet.yaml; "
        "read as an unknown schema that accepts any value",
    )


def test_syntax_error_in_a_referenced_file_is_located_in_that_file(tmp_path: Path) -> None:
    pet = write(tmp_path / "pet.yaml", "Pet:\n\ttype: object\n")
    spec = write(tmp_path / "openapi.yaml", REF_SPEC.format(ref="pet.yaml#/Pet"))

    document, sink = load(spec)

    assert document is None
    assert only_error(sink)[0] == f"{pet.as_posix()}:2:1"


def test_fragment_that_is_not_a_pointer_is_an_error(tmp_path: Path) -> None:
    spec = write(tmp_path / "openapi.yaml", REF_SPEC.format(ref="#Pet"))

    document, sink = load(spec)

    assert document is None
    assert "must be a JSON pointer" in only_error(sink)[1]


# ---------------------------------------------------------------------- corpus
def corpus_cases() -> list[Any]:
    rows = corpus_rows()
    return [
        pytest.param(
            row["name"],
            row["entry_file"],
            id=row["name"],
            marks=[pytest.mark.slow] if int(row["size_bytes"]) > 2_000_000 else [],
        )
        for row in rows
    ]


@pytest.mark.parametrize(("name", "entry_file"), corpus_cases())
def test_every_corpus_spec_loads(
    name: str, entry_file: str, no_network: list[tuple[Any, ...]]
) -> None:
    entry = CORPUS / entry_file
    # A spec kept in its own corpus folder may reach across it (petstore-separate's
    # spec/swagger.yaml uses ../common/Error.yaml), so that folder is its root.
    root = CORPUS / entry_file.split("/")[0] if "/" in entry_file else None
    sink = DiagnosticSink()

    document = load_document(entry, sink, root=root)

    assert document is not None, [d.render() for d in sink.errors]
    assert all(ref.startswith("#") for ref in all_refs(document.data))
    if name == "prance-recursive-objs":
        # Its remote http $ref is never fetched: a warning where it is, and a placeholder.
        location, message = only_warning(sink)
        assert location == f"{entry.as_posix()}:70:13"
        assert message.startswith("network $ref not fetched")
    assert no_network == []


def test_G3_json_too_deep_for_the_parser_is_still_located_at_the_limit(tmp_path: Path) -> None:
    # 5,000 levels exhaust the JSON parser's stack before the depth check can run.
    spec = write(tmp_path / "deep.json", '{"a":\n' + "[" * 5000 + "]" * 5000 + "}")

    document, sink = load(spec)

    assert document is None
    assert only_error(sink) == (
        f"{spec.as_posix()}:2:256",
        "nested deeper than 256 levels (max_depth)",
    )
