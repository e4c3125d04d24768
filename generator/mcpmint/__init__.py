"""mcpmint: generate typed, strict, safe MCP servers from OpenAPI specs and tool manifests."""

from importlib.metadata import PackageNotFoundError, version

try:  # the installed distribution's, which its build took from git tags (pyproject.toml)
    __version__ = version("mcpmint")
except PackageNotFoundError:  # pragma: no cover - a source tree that was never installed
    __version__ = "0.1.0"
__all__ = ["__version__"]
