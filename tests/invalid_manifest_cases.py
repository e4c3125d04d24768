"""The diagnostic each invalid tool manifest in `specs/invalid/manifest/` must produce.

File name -> (location exactly as rendered when mcpmint runs from the repository root on
`specs/invalid/manifest/<file>`, a substring of the error message). Tested by
`tests/test_manifest.py`.
"""

from __future__ import annotations

INVALID_MANIFEST_DIR = "specs/invalid/manifest"

EXPECTED_MANIFESTS: dict[str, tuple[str, str]] = {
    "manifest-unknown-key.yaml": (
        "specs/invalid/manifest/manifest-unknown-key.yaml:8:5",
        "unknown key 'retries' in tools/0",
    ),
    "manifest-bad-example.yaml": (
        "specs/invalid/manifest/manifest-bad-example.yaml:13:10",
        "example 1 of tool 'get_order' does not match its input_schema at order_id",
    ),
    "manifest-two-implementations.yaml": (
        "specs/invalid/manifest/manifest-two-implementations.yaml:4:5",
        "tool 'ping' needs exactly one implementation",
    ),
    "manifest-duplicate-name.yaml": (
        "specs/invalid/manifest/manifest-duplicate-name.yaml:8:5",
        "two tools are named 'bad_ping': specs/invalid/manifest/manifest-duplicate-name.yaml:4:5",
    ),
    "manifest-unknown-placeholder.yaml": (
        "specs/invalid/manifest/manifest-unknown-placeholder.yaml:12:25",
        "path placeholder {order_id} is not an argument of input_schema",
    ),
    "manifest-reserved-header.yaml": (
        "specs/invalid/manifest/manifest-reserved-header.yaml:15:9",
        "argument 'token' may not set the Authorization header",
    ),
    "manifest-prompt-placeholder.yaml": (
        "specs/invalid/manifest/manifest-prompt-placeholder.yaml:11:9",
        "{agent} is not an argument of prompt 'greet'",
    ),
    "manifest-resource-path.yaml": (
        "specs/invalid/manifest/manifest-resource-path.yaml:9:12",
        "path placeholder {order_id} is not a variable of the uri_template",
    ),
    "manifest-no-tools.yaml": (
        "specs/invalid/manifest/manifest-no-tools.yaml:3:1",
        "the server has no tools: a generated server needs at least one",
    ),
    "manifest-bad-tool-name.yaml": (
        "specs/invalid/manifest/manifest-bad-tool-name.yaml:4:5",
        "tools/0/name: 'Get-Order' does not match",
    ),
}
