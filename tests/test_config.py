"""The project config, `mcpmint.yaml` (docs/config.md): schema, located errors, selection,
overrides, and the command line that uses it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from mcpmint import ir
from mcpmint.config import config_schema, is_config_path, load_config, scaffold_text
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import GenerateOptions, build_config, generate

from .conftest import REPO, SPECS
from .invalid_config_cases import EXPECTED_CONFIGS, INVALID_CONFIG_DIR
from .support import PLUS, errors_of, mcpmint, write_config

ALL_PLUS = {
    "petstore_create_pet",
    "petstore_delete_pet",
    "petstore_get_pet",
    "petstore_list_all_pets_owned_specific_user_including_archived",
    "petstore_list_categories",
    "petstore_list_pets",
    "petstore_update_pet",
    "petstore_create_stores_inventory_adjustments_by_category",
}


def server_of(folder: Path, body: str) -> tuple[ir.Server, DiagnosticSink]:
    sink = DiagnosticSink()
    config = load_config(write_config(folder, body), sink)
    assert config is not None, [d.render() for d in sink]
    return build_config(config, sink), sink


def tools(server: ir.Server) -> dict[str, ir.Tool]:
    return {tool.name: tool for tool in server.tools}


# ---------------------------------------------------------------------- the schema
def test_the_shipped_schema_is_valid_json_schema_2020_12() -> None:
    Draft202012Validator.check_schema(config_schema())
    assert config_schema() == json.loads((SPECS / "mcpmint.schema.json").read_text())


def test_the_scaffold_is_a_valid_config() -> None:
    text = scaffold_text("../specs/petstore.yaml", "yes", "../specs")
    assert 'namespace: "yes"' in text  # never read back as a boolean
    import yaml

    data = yaml.safe_load(text)
    assert data == {
        "sources": [{"spec": "../specs/petstore.yaml", "namespace": "yes", "root": "../specs"}]
    }
    assert not list(Draft202012Validator(config_schema()).iter_errors(data))


@pytest.mark.parametrize("check", [False, True], ids=["generate", "check"])
@pytest.mark.parametrize("name", sorted(EXPECTED_CONFIGS))
def test_each_invalid_config_gives_its_located_error_exit_2_and_writes_nothing(
    name: str, check: bool, tmp_path: Path
) -> None:
    # Both read the config unchecked first, for the quick check: whatever it holds, the
    # checked read that follows is what the user sees.
    location, message = EXPECTED_CONFIGS[name]
    out = tmp_path / "out"
    flags = ["--check"] if check else []
    code, stdout, stderr = mcpmint(
        "generate", f"{INVALID_CONFIG_DIR}/{name}", "-o", str(out), *flags
    )
    assert code == 2, stdout + stderr
    assert f"{location}: error: " in stderr, stderr
    assert message in stderr, stderr
    assert "hint: " in stderr
    assert "Traceback" not in stderr + stdout
    assert not out.exists()


def test_invalid_configs_all_have_an_expected_diagnostic() -> None:
    on_disk = {p.name for p in (REPO / INVALID_CONFIG_DIR).iterdir() if p.is_file()}
    assert on_disk == set(EXPECTED_CONFIGS)


def test_every_schema_error_is_reported_not_just_the_first(tmp_path: Path) -> None:
    errors = errors_of(
        tmp_path,
        "    namespce: x\n    overrides:\n      listPets: {hidden: maybe}\n"
        "output: {max_tool_name: 0}\n",
    )
    assert len(errors) == 3, errors  # in the order of the file
    assert [e.split(": error")[0].rsplit(":", 2)[1] for e in errors] == ["3", "5", "6"]
    assert any(":3:5: error: unknown key 'namespce'" in e for e in errors)
    assert any(
        ":5:18: error: sources/0/overrides/listPets/hidden: expected boolean" in e for e in errors
    )
    assert any(
        ":6:10: error: output/max_tool_name: 0 is less than the minimum" in e for e in errors
    )


def test_a_config_is_recognised_by_name_folder_or_content(tmp_path: Path) -> None:
    assert is_config_path(tmp_path)
    assert is_config_path(tmp_path / "mcpmint.yaml")
    assert is_config_path(tmp_path / "staging.mcpmint.yml")
    (tmp_path / "server.yaml").write_text("server: {name: a-mcp}\nsources: []\n")
    assert is_config_path(tmp_path / "server.yaml")
    assert not is_config_path(PLUS)
    assert not is_config_path(SPECS / "invalid" / "bad-json.json")


# ---------------------------------------------------------------------- selection
def test_include_by_tag(tmp_path: Path) -> None:
    server, _ = server_of(tmp_path, "    include: {tags: [store]}\n")
    assert set(tools(server)) == {
        "petstore_list_categories",
        "petstore_create_stores_inventory_adjustments_by_category",
    }


def test_include_by_operation_id(tmp_path: Path) -> None:
    server, _ = server_of(tmp_path, "    include: {operations: [getPet, listPets]}\n")
    assert set(tools(server)) == {"petstore_get_pet", "petstore_list_pets"}


def test_include_by_method_any_case(tmp_path: Path) -> None:
    server, _ = server_of(tmp_path, "    include: {methods: [get, HEAD]}\n")
    assert all(tool.request.method == "GET" for tool in server.tools)
    assert len(server.tools) == 4
    # A method no operation uses is a warning, located at the entry.
    server, sink = server_of(tmp_path, "    include: {methods: [GET, HEAD]}\n")
    assert [w.location for w in sink.warnings] == [f"{tmp_path}/mcpmint.yaml:3:30"]


def test_include_by_path_glob(tmp_path: Path) -> None:
    server, _ = server_of(tmp_path, '    include: {paths: ["/pets/*"]}\n')
    assert {t.request.path for t in server.tools} == {"/pets/{petId}"}
    server, _ = server_of(tmp_path, '    include: {paths: ["/pets*", "/users/*"]}\n')
    assert len(server.tools) == 6


def test_include_keys_combine_with_and(tmp_path: Path) -> None:
    server, _ = server_of(tmp_path, "    include: {tags: [pets], methods: [GET]}\n")
    assert set(tools(server)) == {"petstore_get_pet", "petstore_list_pets"}


def test_exclude_drops_what_matches_any_entry(tmp_path: Path) -> None:
    server, _ = server_of(
        tmp_path, "    exclude: {methods: [DELETE], operations: [createPet], tags: [users]}\n"
    )
    assert set(tools(server)) == ALL_PLUS - {
        "petstore_delete_pet",
        "petstore_create_pet",
        "petstore_list_all_pets_owned_specific_user_including_archived",
    }


def test_exclude_then_include(tmp_path: Path) -> None:
    server, _ = server_of(
        tmp_path, "    include: {tags: [pets]}\n    exclude: {paths: ['/users/*']}\n"
    )
    assert len(server.tools) == 5


def test_unknown_tag_is_a_located_error(tmp_path: Path) -> None:
    errors = errors_of(tmp_path, "    include: {tags: [pets, petz]}\n")
    assert errors[0].startswith(
        f"{tmp_path}/mcpmint.yaml:3:28: error: no operation has the tag 'petz'"
    )
    assert "tags in the spec: pets, store, users" in errors[0]


def test_selecting_nothing_is_an_error(tmp_path: Path) -> None:
    errors = errors_of(tmp_path, "    exclude: {paths: ['*']}\n")
    assert errors == [
        f"{tmp_path}/mcpmint.yaml:3:5: error: the selection keeps none of the spec's 8 "
        "operations\n    hint: check include/exclude (include keeps operations that match every "
        "key given; exclude drops those that match any entry) and the `hidden` overrides"
    ]


# ---------------------------------------------------------------------- overrides
def test_override_renames_by_operation_id_or_method_and_path(tmp_path: Path) -> None:
    server, _ = server_of(
        tmp_path,
        "    overrides:\n"
        "      listPets: {name: find_pets}\n"
        "      get /pets/{petId}: {name: petstore_pet}\n"
        "      POST /pets: {title: Add a pet, description: Adds a pet. Use it when ...}\n",
    )
    named = tools(server)
    assert "petstore_find_pets" in named and "petstore_list_pets" not in named
    assert "petstore_pet" in named  # the namespace prefix is not doubled
    assert named["petstore_find_pets"].class_stem == "FindPets"
    created = named["petstore_create_pet"]
    assert created.title == created.annotations.title == "Add a pet"
    assert created.description == "Adds a pet. Use it when ..."


def test_override_name_resolves_a_collision_and_must_fit(tmp_path: Path) -> None:
    errors = errors_of(tmp_path, "    overrides:\n      listCategories: {name: " + "x" * 60 + "}\n")
    assert errors[0].startswith(f"{tmp_path}/mcpmint.yaml:4:7: error: override name 'petstore_x")
    assert "more than output.max_tool_name (64)" in errors[0]
    server, _ = server_of(
        tmp_path,
        "    overrides:\n      listCategories: {name: " + "x" * 60 + "}\n"
        "output: {max_tool_name: 128}\n",
    )
    assert "petstore_" + "x" * 60 in tools(server)


def test_two_overrides_giving_one_name_name_both(tmp_path: Path) -> None:
    errors = errors_of(
        tmp_path,
        "    overrides:\n      listPets: {name: pets}\n      listCategories: {name: pets}\n",
    )
    assert len(errors) == 1
    assert errors[0].startswith(
        f"{tmp_path}/mcpmint.yaml:5:7: error: override name 'petstore_pets'"
    )
    assert f"GET /pets (override at {tmp_path}/mcpmint.yaml:4:7)" in errors[0]


def test_override_hides_an_operation(tmp_path: Path) -> None:
    server, _ = server_of(tmp_path, "    overrides:\n      DELETE /pets/{petId}: {hidden: true}\n")
    assert set(tools(server)) == ALL_PLUS - {"petstore_delete_pet"}


def test_override_may_downgrade_annotations_and_with_them_confirmation(tmp_path: Path) -> None:
    server, _ = server_of(
        tmp_path,
        "    overrides:\n"
        "      createPet:\n"
        "        annotations: {readOnlyHint: true, idempotentHint: true, openWorldHint: false}\n"
        "      deletePet: {confirmation: none}\n"
        "      listPets: {confirmation: required, annotations: {destructiveHint: true}}\n",
    )
    named = tools(server)
    created = named["petstore_create_pet"]
    assert created.annotations == ir.Annotations(
        created.title, read_only=True, destructive=False, idempotent=True, open_world=False
    )
    assert created.confirmation == "none"  # the writes policy reads the operator's annotations
    deleted = named["petstore_delete_pet"]
    assert deleted.annotations.destructive and deleted.confirmation == "none"
    listed = named["petstore_list_pets"]
    assert listed.annotations.destructive and listed.confirmation == "required"
    assert named["petstore_update_pet"].confirmation == "required"  # untouched


def test_output_options_reach_every_tool(tmp_path: Path) -> None:
    server, _ = server_of(tmp_path, "output: {confirmation: destructive, max_tool_name: 32}\n")
    named = tools(server)
    assert named["petstore_create_pet"].confirmation == "none"
    assert named["petstore_delete_pet"].confirmation == "required"
    assert max(len(name) for name in named) <= 32


def test_override_of_an_unselected_operation_is_a_warning(tmp_path: Path) -> None:
    server, sink = server_of(
        tmp_path,
        "    include: {tags: [store]}\n    overrides:\n      listPets: {name: pets}\n",
    )
    assert len(server.tools) == 2
    assert [w.location for w in sink.warnings] == [f"{tmp_path}/mcpmint.yaml:5:7"]
    assert "is not selected" in sink.warnings[0].message


def test_server_identity(tmp_path: Path) -> None:
    server, _ = server_of(
        tmp_path,
        "    namespace: pets\n"
        "server: {name: acme-pets, package: acme_pets, version: 1.2.3,\n"
        "         instructions: Use these tools for the ACME pet shop.}\n",
    )
    assert (server.distribution, server.package, server.version) == (
        "acme-pets",
        "acme_pets",
        "1.2.3",
    )
    assert server.instructions == "Use these tools for the ACME pet shop."
    assert server.namespace == "pets" and "pets_list_pets" in tools(server)


# ---------------------------------------------------------------------- the command line
def tree(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(folder.rglob("*"))
        # The stage cache is not output: its keys include how the spec was named.
        if p.is_file() and "__pycache__" not in p.parts and "cache" not in p.parts
    }


def test_round_trip_generate_spec_then_generate_inside_the_folder(tmp_path: Path) -> None:
    out = tmp_path / "petstore-mcp"
    code, stdout, stderr = mcpmint("generate", str(PLUS), "-o", str(out))
    assert code == 0, stderr
    first = tree(out)
    spec_from_out = Path(os.path.relpath(PLUS, out)).as_posix()
    assert first["mcpmint.yaml"] == scaffold_text(spec_from_out, "petstore")
    code, stdout, stderr = mcpmint("generate", cwd=out)
    assert code == 0, stderr
    assert stderr == ""
    # The spec run recorded the fingerprint of this run too: nothing changed, nothing to do.
    assert stdout == ".: up to date (inputs unchanged)\n"
    assert tree(out) == first
    # And the whole pipeline, run from the config all the same, gives the same tree, the
    # manifest included, and writes nothing.
    sink = DiagnosticSink()
    config = load_config(out / "mcpmint.yaml", sink)
    assert config is not None
    report = generate(config, GenerateOptions(output=None), sink)
    assert not sink.has_errors
    assert report.written == [] and report.scaffolded == [] and report.removed == []
    assert tree(out) == first
    code, stdout, _ = mcpmint("generate", "--check", cwd=out)
    assert code == 0 and "up to date (inputs unchanged)" in stdout
    # A changed config is a changed input.
    config = out / "mcpmint.yaml"
    config.write_text(config.read_text() + "    overrides:\n      listPets: {hidden: true}\n")
    code, stdout, _ = mcpmint("generate", "--check", cwd=out)
    assert code == 1 and "out of date" in stdout


def test_generate_a_config_outside_the_output_folder(tmp_path: Path) -> None:
    config = write_config(tmp_path, "    include: {tags: [store]}\n")
    code, _, stderr = mcpmint("generate", str(config))
    assert code == 0, stderr
    catalog = json.loads((tmp_path / "src/petstore_mcp/_generated/tools.json").read_text())
    assert len(catalog["tools"]) == 2
    assert config.read_text().startswith("sources:")  # the user's config is never rewritten
    code, _, stderr = mcpmint("generate", str(config), "-o", str(tmp_path / "elsewhere"))
    assert code == 0, stderr
    assert not (tmp_path / "elsewhere" / "mcpmint.yaml").exists()


def test_a_spec_run_warns_about_an_edited_config_it_ignores(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert mcpmint("generate", str(PLUS), "-o", str(out))[0] == 0
    assert mcpmint("generate", str(PLUS), "-o", str(out))[2] == ""  # the scaffold as written
    config = out / "mcpmint.yaml"
    config.write_text(config.read_text() + "output: {confirmation: all}\n")
    code, _, stderr = mcpmint("generate", str(PLUS), "-o", str(out))
    assert code == 0
    assert "warning: this output folder has its own project config" in stderr


def test_validate_and_tools_read_a_config(tmp_path: Path) -> None:
    write_config(tmp_path, "    include: {methods: [GET]}\n")
    code, stdout, stderr = mcpmint("validate", "mcpmint.yaml", cwd=tmp_path)
    assert code == 0, stderr
    assert stdout == "mcpmint.yaml: ok, 4 tools, 0 warnings\n"
    code, stdout, _ = mcpmint("validate", cwd=tmp_path)
    assert code == 0 and "ok, 4 tools" in stdout
    code, stdout, _ = mcpmint("tools", str(tmp_path), "--json")
    assert code == 0 and json.loads(stdout)["summary"]["tools"] == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mcpmint.yaml"]


def test_no_argument_and_no_config_is_bad_input(tmp_path: Path) -> None:
    code, _, stderr = mcpmint("generate", cwd=tmp_path)
    assert code == 2
    assert "no SPEC given and no mcpmint.yaml in the current folder" in stderr


def test_namespace_and_root_flags_belong_in_the_config(tmp_path: Path) -> None:
    write_config(tmp_path, "")
    code, _, stderr = mcpmint("generate", "--namespace", "pets", cwd=tmp_path)
    assert code == 2 and "--namespace cannot be used with a project config" in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mcpmint.yaml"]
