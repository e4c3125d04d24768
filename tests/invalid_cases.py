"""The diagnostic each file in `specs/invalid/` must produce.

File name -> (location exactly as `Diagnostic.location` renders it when the generator is run
from the repository root on `specs/invalid/<file>`, a substring of the error message).
Shared by the load/validate tests and the CLI-level test.
"""

from __future__ import annotations

INVALID_DIR = "specs/invalid"

EXPECTED: dict[str, tuple[str, str]] = {
    "bad-yaml.yaml": ("specs/invalid/bad-yaml.yaml:4:1", "YAML syntax error"),
    "python-tag.yaml": (
        "specs/invalid/python-tag.yaml:3:8",
        "YAML tag !!python/object/apply:os.system is not allowed",
    ),
    "billion-laughs.yaml": ("specs/invalid/billion-laughs.yaml:20:6", "(max_nodes)"),
    "not-openapi.yaml": ("specs/invalid/not-openapi.yaml:2:1", "no `openapi` or `swagger` key"),
    "openapi-4.yaml": ("specs/invalid/openapi-4.yaml:2:1", "unsupported openapi version 4.0"),
    "ref-outside.yaml": ("specs/invalid/ref-outside.yaml:16:17", "outside the spec folder"),
    "ref-file-scheme.yaml": (
        "specs/invalid/ref-file-scheme.yaml:16:17",
        "outside the spec folder",
    ),
    # Unresolvable refs: a warning where the load stage meets them; errors only because the
    # frontend cannot make a tool of an operation without its parameter, body or path item.
    "ref-network.yaml": (
        "specs/invalid/ref-network.yaml:12:11",
        "operation GET /pets cannot become a tool: its parameter network $ref not fetched",
    ),
    "broken-pointer.yaml": (
        "specs/invalid/broken-pointer.yaml:12:9",
        "operation POST /pets cannot become a tool: its request body broken $ref "
        "'#/components/requestBodies/Nope'",
    ),
    "ref-missing-file.yaml": (
        "specs/invalid/ref-missing-file.yaml:9:5",
        "path /pets: its path item $ref 'paths/missing.yaml#/pets': file "
        "specs/invalid/paths/missing.yaml does not exist",
    ),
    # Found by the IR stage (frontends/openapi.py), at the second operationId.
    "duplicate-operation-id.yaml": (
        "specs/invalid/duplicate-operation-id.yaml:15:7",
        "duplicate operationId 'getPet'",
    ),
    "bad-json.json": ("specs/invalid/bad-json.json:11:9", "JSON syntax error"),
}

# Cases whose error comes from a stage after load and validate.
LATER_STAGE = frozenset(
    {
        "duplicate-operation-id.yaml",
        "ref-network.yaml",
        "broken-pointer.yaml",
        "ref-missing-file.yaml",
    }
)
