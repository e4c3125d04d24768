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
    "bad-json.json": ("specs/invalid/bad-json.json:11:9", "JSON syntax error"),
}

# Cases whose error comes from a stage after load and validate (none left: an operation that
# cannot become a tool is left out with a warning, see DEGRADED).
LATER_STAGE: frozenset[str] = frozenset()

DEGRADED_DIR = "specs/degraded"

# `specs/degraded/`: input that was once refused and now gives a server, with a located
# warning saying what was left out or read otherwise. File name -> (location, a substring
# of the warning).
DEGRADED: dict[str, tuple[str, str]] = {
    "ref-outside.yaml": (
        "specs/degraded/ref-outside.yaml:16:17",
        "points outside the spec folder; not read",
    ),
    "ref-file-scheme.yaml": (
        "specs/degraded/ref-file-scheme.yaml:16:17",
        "points outside the spec folder; not read",
    ),
    "ref-network.yaml": (
        "specs/degraded/ref-network.yaml:9:5",
        "operation GET /pets cannot become a tool (1 problem(s) above); left out",
    ),
    "broken-pointer.yaml": (
        "specs/degraded/broken-pointer.yaml:9:5",
        "operation POST /pets cannot become a tool (1 problem(s) above); left out",
    ),
    "ref-missing-file.yaml": (
        "specs/degraded/ref-missing-file.yaml:9:5",
        "path /pets: its path item $ref 'paths/missing.yaml#/pets'",
    ),
    "duplicate-operation-id.yaml": (
        "specs/degraded/duplicate-operation-id.yaml:15:7",
        "duplicate operationId 'getPet'",
    ),
}
