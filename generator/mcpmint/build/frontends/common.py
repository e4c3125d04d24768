"""What every frontend does the same way (OpenAPI and manifests): the names a server and its
credentials get, how a security requirement is read, and what an HTTP method says about a tool.

One place, so that a manifest tool and an OpenAPI tool bound to the same endpoint come out
alike: same package names, same environment variables, same annotations.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from mcpmint import ir, refs
from mcpmint.build import naming
from mcpmint.build.text import clean_text, one_line
from mcpmint.diagnostics import DiagnosticSink


def new_server(
    namespace: str,
    *,
    title: str,
    version: str,
    description: str,
    tools: Iterable[ir.Tool],
    security_schemes: Iterable[ir.SecurityScheme],
    **rest: Any,
) -> ir.Server:
    """The server of `namespace`: `petstore` is the distribution `petstore-mcp`, the package
    `petstore_mcp` and the variables `PETSTORE_*`. Tools and schemes are sorted by name, so the
    output does not depend on the order of the input. Each tool's model classes get a stem
    of their own (`naming.class_stems`)."""
    return ir.Server(
        distribution=f"{namespace.replace('_', '-')}-mcp",
        package=f"{namespace}_mcp",
        namespace=namespace,
        env_prefix=namespace.upper(),
        title=title,
        version=one_line(version, 64),
        description=clean_text(description),
        instructions="",
        tools=with_class_stems(sorted(tools, key=lambda t: t.name)),
        security_schemes=tuple(sorted(security_schemes, key=lambda s: s.name)),
        **rest,
    )


def with_class_stems(tools: Sequence[ir.Tool]) -> tuple[ir.Tool, ...]:
    """`tools` (sorted by name), each with a class stem that is an identifier's start and
    no other tool's (`naming.class_stems`)."""
    stems = naming.class_stems([tool.class_stem for tool in tools])
    return tuple(
        tool if tool.class_stem == stem else replace(tool, class_stem=stem)
        for tool, stem in zip(tools, stems, strict=True)
    )


def default_title(stem: str) -> str:
    """A title from a tool name without its namespace: `list_pets` -> "List pets"."""
    return " ".join(naming.words(stem)).capitalize()


def namespaced(namespace: str, name: str) -> str:
    """An operator's name, taken as written but for the namespace prefix it may leave out."""
    return name if name.startswith(namespace + "_") else f"{namespace}_{name}"


# ---------------------------------------------------------------------- security schemes
def credential_variable(env_prefix: str, scheme: str) -> str:
    """The environment variable (or the stem of the variables) of a scheme's credential."""
    return f"{env_prefix}_{naming.env_name(scheme) or 'CREDENTIAL'}"


def api_key_scheme(name: str, location: str, parameter: str, var: str) -> ir.SecurityScheme:
    return ir.SecurityScheme(name, "apiKey", location, parameter, env=(("value", var),))


def bearer_scheme(name: str, var: str) -> ir.SecurityScheme:
    return ir.SecurityScheme(name, "http", scheme="bearer", env=(("token", var),))


def basic_scheme(name: str, var: str) -> ir.SecurityScheme:
    basic = (("password", f"{var}_PASSWORD"), ("username", f"{var}_USERNAME"))
    return ir.SecurityScheme(name, "http", scheme="basic", env=basic)


def security_requirements(
    document: Mapping[str, Any],
    node: Mapping[str, Any],
    pointer: str,
    known: set[str],
    locate: Callable[[str], str],
    sink: DiagnosticSink,
    undefined: tuple[str, str],
    lenient: set[str] | None = None,
) -> tuple[tuple[ir.SchemeUse, ...], ...]:
    """The `security:` of the operation or tool `node` at `pointer` (else the document's) as
    alternatives of scheme uses. A scheme not in `known` is an error: `undefined` is its
    message (followed by the scheme) and hint. What is not a list of mappings is passed over
    (an OpenAPI validator has reported it; a manifest's schema refuses it).

    `lenient` (a spec's, not the operator's manifest): such a scheme is a warning instead,
    once per place (`lenient` holds the places warned about). The scheme the spec most
    plausibly meant (one known scheme of the same name in another case or spelling) is used
    instead, said in the warning; without one, the alternative that needs it is dropped (the
    operation is generated without it)."""
    if "security" in node:
        requirements, where = node["security"], refs.join(pointer, "security")
    else:
        requirements, where = document.get("security", []), "#/security"
    if not isinstance(requirements, list):
        return ()
    alternatives: list[tuple[ir.SchemeUse, ...]] = []
    for index, requirement in enumerate(requirements):
        if not isinstance(requirement, Mapping):
            continue
        uses: list[ir.SchemeUse] = []
        dropped = False
        for scheme, scopes in requirement.items():
            if scheme not in known:
                message, hint = undefined
                place = locate(refs.join(where, index, scheme))
                if lenient is None:
                    sink.error(place, f"{message} {scheme!r}", hint)
                    continue
                meant = plausible_scheme(str(scheme), known)
                if place not in lenient:
                    lenient.add(place)
                    sink.warning(
                        place,
                        f"{message} {scheme!r}; "
                        + (
                            f"read as the scheme {meant!r}, which it most plausibly means"
                            if meant
                            else "the operations that name it are generated without it"
                        ),
                        hint,
                    )
                if meant is None:
                    dropped = True
                    continue
                scheme = meant
            scope_list = tuple(str(s) for s in scopes) if isinstance(scopes, list) else ()
            uses.append(ir.SchemeUse(str(scheme), scope_list))
        if dropped and not uses:
            continue  # needs only what cannot be sent: generated without it
        alternatives.append(tuple(sorted(uses, key=lambda u: u.scheme)))
    return tuple(alternatives)


def one_credential_per_place(
    alternatives: tuple[tuple[ir.SchemeUse, ...], ...],
    schemes: Mapping[str, ir.SecurityScheme],
) -> tuple[tuple[tuple[ir.SchemeUse, ...], ...], list[tuple[str, ...]]]:
    """`alternatives` where no alternative needs two credentials in one place, and the clashes
    split. A request carries one Authorization header (one value per header, query parameter
    or cookie name), so a requirement whose schemes would all set it cannot be met as
    written; specs that write one mean either (Google's `{Oauth2: [...], Oauth2c: [...]}`: one
    OAuth 2.0 token, two ways to get it). Each way to pick one scheme per place becomes an
    alternative, with the requirement's other schemes. Also returns the schemes that clashed,
    per clash, for a warning."""
    out: list[tuple[ir.SchemeUse, ...]] = []
    clashes: list[tuple[str, ...]] = []
    for uses in alternatives:
        by_place: dict[str, list[ir.SchemeUse]] = {}
        for use in uses:
            scheme = schemes.get(use.scheme)
            by_place.setdefault(credential_place(scheme) if scheme else use.scheme, []).append(use)
        groups = list(by_place.values())
        clashing = [group for group in groups if len(group) > 1]
        if not clashing:
            out.append(uses)
            continue
        clashes.extend(tuple(use.scheme for use in group) for group in clashing)
        for picked in itertools.product(*groups):
            split = tuple(sorted(picked, key=lambda u: u.scheme))
            if split not in out:
                out.append(split)
    return tuple(out), clashes


def credential_place(scheme: ir.SecurityScheme) -> str:
    """Where a scheme puts its credential (`header authorization`, `query key`): HTTP
    authentication and OAuth 2.0 in the Authorization header, an API key where it says."""
    if scheme.type != "apiKey":
        return "header authorization"
    name = scheme.parameter.lower() if scheme.location == "header" else scheme.parameter
    return f"{scheme.location} {name}"


def plausible_scheme(name: str, known: set[str]) -> str | None:
    """The one known scheme `name` most plausibly means: the same name in another case or
    with other separators, else the one close spelling (difflib), else None."""
    folded = re.sub(r"[^a-z0-9]", "", name.lower())
    same = sorted(k for k in known if re.sub(r"[^a-z0-9]", "", k.lower()) == folded)
    if len(same) == 1:
        return same[0]
    close = difflib.get_close_matches(name, sorted(known), n=2, cutoff=0.85)
    return close[0] if len(close) == 1 else None


# ---------------------------------------------------------------------- annotations
def method_annotations(method: str, title: str) -> ir.Annotations:
    """Derived from the method only: hints inside a spec never make a tool look safer."""
    if method in ("GET", "HEAD", "OPTIONS", "TRACE"):
        return ir.Annotations(title, read_only=True, destructive=False, idempotent=True)
    if method == "POST":
        return ir.Annotations(title, read_only=False, destructive=False, idempotent=False)
    if method == "PATCH":
        return ir.Annotations(title, read_only=False, destructive=True, idempotent=False)
    # PUT replaces and DELETE removes: both can lose data, and both are idempotent.
    return ir.Annotations(title, read_only=False, destructive=True, idempotent=True)
