"""Your hooks: the Python behind handler tools, and code that runs around every call.

mcpmint wrote this file once, when it was missing, and never changes it: it is yours.

- Handler tools (`handler: true` in a tool manifest) are answered by the function registered
  with `@hooks.handler("<tool name>")`. Until you fill one in, calling its tool returns a
  "not implemented yet" error result. When a manifest gains a handler tool later, its typed
  stub is generated into `_generated/handler_stubs.py`: copy it here.
- `@hooks.before_call()` (every tool) or `@hooks.before_call("<tool name>")` runs after the
  arguments are validated and before confirmation and sending:
  `def hook(tool: str, arguments: dict[str, Any], caller: str) -> dict[str, Any] | Refusal`.
  Return the arguments (rewritten or not; rewritten ones are validated again) or
  `Refusal("a message the model reads")` to stop the call.
- `@hooks.after_call()` or `@hooks.after_call("<tool name>")`:
  `def hook(tool: str, arguments: dict[str, Any], result: CallToolResult) -> CallToolResult`.

Hooks may be plain or `async` functions. A hook registered for a tool that does not exist
stops the server at start-up, so a typo never goes unnoticed.
"""

from __future__ import annotations

from ._runtime.hooks import Hooks, Refusal

__all__ = ["Refusal", "hooks"]

hooks = Hooks()
