"""mcpmint: generate typed, strict, safe MCP servers from OpenAPI specs and tool manifests."""

__version__ = "0.1.0"
__all__ = ["__version__"]
