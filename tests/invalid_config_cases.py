"""The diagnostic each invalid project config in `specs/invalid/config/` must produce.

File name -> (location exactly as rendered when mcpmint runs from the repository root on
`specs/invalid/config/<file>`, a substring of the error message). Tested by
`tests/test_config.py`.
"""

from __future__ import annotations

INVALID_CONFIG_DIR = "specs/invalid/config"

EXPECTED_CONFIGS: dict[str, tuple[str, str]] = {
    "config-unknown-key.yaml": (
        "specs/invalid/config/config-unknown-key.yaml:4:1",
        "unknown key 'ouptut' in the config",
    ),
    "config-bad-confirmation.yaml": (
        "specs/invalid/config/config-bad-confirmation.yaml:5:3",
        "'sometimes' is not one of writes | destructive | all | none",
    ),
    "config-bad-result-models.yaml": (
        "specs/invalid/config/config-bad-result-models.yaml:5:3",
        "'some' is not one of auto | all | handlers",
    ),
    "config-max-tool-name.yaml": (
        "specs/invalid/config/config-max-tool-name.yaml:5:3",
        "200 is greater than the maximum of 128",
    ),
    "config-unknown-override-key.yaml": (
        "specs/invalid/config/config-unknown-override-key.yaml:6:9",
        "unknown key 'readOnly' in sources/0/overrides/listPets",
    ),
    "config-stale-override.yaml": (
        "specs/invalid/config/config-stale-override.yaml:7:7",
        "override 'removePet' names no operation of the spec",
    ),
    "config-override-collision.yaml": (
        "specs/invalid/config/config-override-collision.yaml:6:7",
        "override name 'petstore_list_pets' for GET /pets/{petId} is already the name of the "
        "tool of GET /pets (specs/petstore-plus.yaml:12:5)",
    ),
    "config-selects-nothing.yaml": (
        "specs/invalid/config/config-selects-nothing.yaml:4:5",
        "the selection keeps none of the spec's 8 operations",
    ),
    "config-unknown-operation.yaml": (
        "specs/invalid/config/config-unknown-operation.yaml:7:11",
        "no operation has the operationId 'listPetz'",
    ),
    "config-two-sources.yaml": (
        "specs/invalid/config/config-two-sources.yaml:5:5",
        "two sources have the namespace 'petstore': "
        "specs/invalid/config/config-two-sources.yaml:3:5 and",
    ),
    "config-tool-name-clash.yaml": (
        "specs/invalid/config/clash/pet-store.yaml:4:5",
        "tool name 'pet_store_list' comes from two sources: "
        "specs/invalid/config/clash/pet.yaml:4:5 (clash/pet.yaml) and "
        "specs/invalid/config/clash/pet-store.yaml:4:5 (clash/pet-store.yaml)",
    ),
    "config-missing-spec.yaml": (
        "specs/invalid/config/config-missing-spec.yaml:3:5",
        "spec 'petstore.yaml' not found",
    ),
    "config-bad-name.yaml": (
        "specs/invalid/config/config-bad-name.yaml:3:3",
        "server/name: 'Petstore MCP' does not match",
    ),
    "config-bad-yaml.yaml": (
        "specs/invalid/config/config-bad-yaml.yaml:4:1",
        "YAML syntax error",
    ),
    "config-no-sources.yaml": (
        "specs/invalid/config/config-no-sources.yaml:4:1",
        "sources: needs at least 1 entry",
    ),
}
