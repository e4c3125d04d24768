"""Several sources in one server: the IR of each source, merged into one `ir.Server`.

The first source is the primary one: it gives the server its namespace, environment prefix,
base URL (`<PREFIX>_BASE_URL`) and identity. Each other source keeps its own upstream, with
its own variable `<PREFIX>_<NS>_BASE_URL`, and its own credentials, whose security schemes are
renamed `<ns>.<scheme>` (variables `<PREFIX>_<NS>_...`) so that two specs may both call a
scheme `bearerAuth`. Tool names must be unique across all sources: a clash is an error naming
where each tool came from. Reference: docs/manifests.md ("Several sources").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from mcpmint import ir
from mcpmint.build import naming
from mcpmint.build.frontends import common
from mcpmint.config import Source
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.load.document import RawDocument


@dataclass(frozen=True)
class Part:
    """One source, built: its config entry, its IR and the document it was read from."""

    source: Source
    server: ir.Server
    document: RawDocument


def merge_sources(parts: Sequence[Part], sink: DiagnosticSink) -> ir.Server:
    """One server from all parts (the first is primary); errors go to `sink`."""
    primary = parts[0].server
    prefix = primary.env_prefix
    owners: dict[str, str] = {}  # namespace -> where its source is written
    tools: list[ir.Tool] = []
    schemes: list[ir.SecurityScheme] = list(primary.security_schemes)
    upstreams: list[ir.Upstream] = []
    skipped: list[str] = list(primary.skipped)
    resources: list[ir.Resource] = list(primary.resources)
    prompts: list[ir.Prompt] = list(primary.prompts)
    for index, part in enumerate(parts):
        server, where = part.server, part.source.location
        if server.namespace in owners:
            sink.error(
                where,
                f"two sources have the namespace {server.namespace!r}: {owners[server.namespace]} "
                f"and {where}",
                "give each source its own `namespace:` in mcpmint.yaml",
            )
            continue
        owners[server.namespace] = where
        if index == 0:
            tools.extend(server.tools)
            continue
        ns_env = f"{prefix}_{naming.env_name(server.namespace)}"
        renamed = {s.name: f"{server.namespace}.{s.name}" for s in server.security_schemes}
        for scheme in server.security_schemes:
            own = server.env_prefix + "_"
            env = tuple((role, ns_env + "_" + var.removeprefix(own)) for role, var in scheme.env)
            schemes.append(replace(scheme, name=renamed[scheme.name], env=env))
        upstreams.append(
            ir.Upstream(
                server.namespace,
                server.base_url,
                f"{ns_env}_BASE_URL",
                server.server_url_template,
                server.server_variables,
            )
        )
        stem_prefix = naming.pascal(server.namespace)
        for tool in server.tools:
            tools.append(
                replace(
                    tool,
                    # Model classes are per server: a second source's could repeat the first's.
                    class_stem=stem_prefix + tool.class_stem,
                    upstream="" if tool.handler else server.namespace,
                    security=tuple(
                        tuple(replace(use, scheme=renamed[use.scheme]) for use in alternative)
                        for alternative in tool.security
                    ),
                )
            )
        skipped.extend(f"{server.namespace}: {note}" for note in server.skipped)
        prompts.extend(server.prompts)
        for resource in server.resources:
            resources.append(
                replace(
                    resource,
                    upstream="" if resource.request is None else server.namespace,
                    security=tuple(
                        tuple(replace(use, scheme=renamed[use.scheme]) for use in alternative)
                        for alternative in resource.security
                    ),
                )
            )
    if len(owners) == len(parts):  # a shared namespace was reported: names would repeat it
        _check_unique_names(parts, sink)
    return replace(
        primary,
        # Prefixed stems can meet (`a` + `BC`, `ab` + `C`): told apart again, whole.
        tools=common.with_class_stems(sorted(tools, key=lambda t: t.name)),
        security_schemes=tuple(sorted(schemes, key=lambda s: s.name)),
        upstreams=tuple(upstreams),
        skipped=tuple(skipped),
        resources=tuple(sorted(resources, key=lambda r: r.name)),
        prompts=tuple(sorted(prompts, key=lambda p: p.name)),
    )


def _check_unique_names(parts: Sequence[Part], sink: DiagnosticSink) -> None:
    """A tool name two sources both give is an error naming both (file:line of each)."""
    where: dict[tuple[str, str], list[str]] = {}
    for part in parts:
        server = part.server
        named = [
            *(("tool name", t.name, t.source) for t in server.tools),
            *(("resource name", r.name, r.source) for r in server.resources),
            *(("resource URI", r.uri or r.uri_template, r.source) for r in server.resources),
            *(("prompt name", p.name, p.source) for p in server.prompts),
        ]
        for kind, name, pointer in named:
            located = f"{part.document.locate(pointer)} ({part.source.spec_text})"
            where.setdefault((kind, name), []).append(located)
    for kind, name in sorted(where):
        found = where[(kind, name)]
        if len(found) > 1:
            sink.error(
                found[1].rsplit(" (", 1)[0],
                f"{kind} {name!r} comes from two sources: " + " and ".join(found),
                "names must be unique across all sources of a server: rename one (an override "
                "`name:` for an OpenAPI operation, `name:` in a manifest) or change a namespace",
            )
