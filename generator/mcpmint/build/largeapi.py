"""Large APIs by default (issue 8): dynamic mode for a new config, a warning for `all` mode.

A model's context holds what `tools/list` returns. GitHub's 1,223 operations listed in `all`
mode are ~1.75 M estimated tokens, more than any model takes. So above `LARGE_TOKENS`:

- `generate SPEC -o DIR` offers `tools: {mode: dynamic}` in the new `mcpmint.yaml`
  (config.scaffold_text), commented out with a note saying why: the config must rebuild the
  tree its run generated (a mode change is the user's, reviewed in the lock diff);
- `generate` in `all` mode without `output.token_budget` warns, naming dynamic mode and the
  budget (a budget is the user's own answer: `check_budget` then decides);
- `output.result_models: auto` models results of handler tools only, whatever the mode
  (models.py: GitHub's result models are 1.7 MB of code and 15 s of generation).

The estimate is `mcpmint tools`'s (toolmodes.estimate_tokens: about four bytes a token).
"""

from __future__ import annotations

from collections.abc import Collection

from mcpmint import ir
from mcpmint.build.toolmodes import estimate_tokens
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.render.templates import tool_definition

__all__ = [
    "LARGE_TOKENS",
    "definition_sizes",
    "every_tool_tokens",
    "is_large",
    "result_models_for",
    "tokens_of",
    "warn_if_large",
]

LARGE_TOKENS = 100_000  # estimated tokens of an all-mode tools/list called large


def every_tool_tokens(server: ir.Server) -> int:
    """Estimated tokens of a `tools/list` listing every tool (all mode), whatever the mode:
    `estimate_tokens` of every definition, from each one's own size."""
    return tokens_of(definition_sizes(server).values())


def definition_sizes(server: ir.Server) -> dict[str, int]:
    """The size of each tool's `tools/list` definition in bytes, by tool name."""
    return {tool.name: _bytes(tool) for tool in server.tools}


def tokens_of(sizes: Collection[int]) -> int:
    """`every_tool_tokens` from the definitions' sizes."""
    # `{"tools":[` + the definitions, a comma between each two + `]}`
    return (len('{"tools":[]}') + sum(sizes) + max(len(sizes) - 1, 0)) // 4


def _bytes(tool: ir.Tool) -> int:
    return estimate_tokens([tool_definition(tool)])[0] - len('{"tools":[]}')


def is_large(tokens: int) -> bool:
    return tokens > LARGE_TOKENS


def result_models_for(policy: str, tokens: int) -> bool:
    """Whether every tool gets a typed result model (`output.result_models`; False: handler
    tools only). `tokens`: `every_tool_tokens`."""
    return policy == "all" or (policy == "auto" and not is_large(tokens))


def warn_if_large(
    count: int,
    tokens: int | None,
    location: str,
    sink: DiagnosticSink,
    *,
    budget: bool,
    from_spec: bool,
) -> None:
    """A warning at `location` when an all-mode `tools/list` of `count` tools and `tokens`
    is large and no token budget was set (`budget`). `from_spec`: a run from a spec, whose
    new mcpmint.yaml offers dynamic mode; the warning says so."""
    if tokens is None or not is_large(tokens) or budget:
        return
    what = (
        "; the new mcpmint.yaml in the output folder offers dynamic mode (commented out)"
        if from_spec
        else ""
    )
    sink.warning(
        location,
        f"tools/list lists all {count} tools, ~{tokens} estimated tokens: more "
        f"than a model's context can spare (large above {LARGE_TOKENS}){what}",
        "set `tools: {mode: dynamic}` in mcpmint.yaml (tools/list then shows 3 tools that "
        "search, describe and call the others), or choose `groups` mode, or set "
        "`output: {token_budget: N}` to accept a size on purpose; see docs/config.md "
        "(Large APIs)",
    )
