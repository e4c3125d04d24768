"""The runtime of generated MCP servers, copied byte for byte into each as `_runtime/`."""
