"""mcpmint: generate typed, strict, safe MCP servers from OpenAPI specs and tool manifests."""

try:  # written by the build from git tags (pyproject.toml: hatch-vcs)
    from mcpmint._version import __version__
except ImportError:  # pragma: no cover - a source tree that was never built or installed
    __version__ = "0.1.0"
__all__ = ["__version__"]
