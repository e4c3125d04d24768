"""JSON pointers and local `$ref` resolution inside a bundled document.

After `load`, every `$ref` in the document is local (`#/...`): external files are mounted
inside the document, so this is all the resolution later stages need.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# The root key under which `load` puts a placeholder for each `$ref` it could not resolve.
UNRESOLVED_KEY = "x-mcpmint-unresolved"


class PointerError(LookupError):
    """A JSON pointer that does not lead anywhere in the document."""


def escape_token(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def unescape_token(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def join(pointer: str, *tokens: str | int) -> str:
    """Extend a `#/...` pointer with raw (unescaped) tokens."""
    return pointer + "".join("/" + escape_token(str(t)) for t in tokens)


def split(pointer: str) -> list[str]:
    """The unescaped tokens of a `#/a/b` (or `/a/b`) pointer."""
    body = pointer[1:] if pointer.startswith("#") else pointer
    if body in ("", "/"):
        return []
    if not body.startswith("/"):
        raise PointerError(f"not a JSON pointer: {pointer!r}")
    from urllib.parse import unquote

    return [unescape_token(unquote(t)) for t in body[1:].split("/")]


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value at `pointer` (`#/components/schemas/Pet`) in `document`."""
    node = document
    for token in split(pointer):
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise PointerError(f"{pointer} does not exist (no {token!r})")
    return node


def into_paths(targets: Iterable[str]) -> bool:
    """Whether a `$ref` of `targets` points into `#/paths` (or at the whole document): a
    path item would then be part of a schema, and its edit a change to the rest."""
    from urllib.parse import unquote

    for target in set(targets):  # a large spec holds a few distinct targets many times
        body = target[1:] if target.startswith("#") else target
        if body in ("", "/") or not body.startswith("/"):
            return True  # the whole document, or not a pointer this module reasons about
        # The first token (as `split` reads it): the others do not matter here.
        if unescape_token(unquote(body[1:].split("/", 1)[0])) == "paths":
            return True
    return False


def is_ref(node: Any) -> bool:
    return isinstance(node, Mapping) and isinstance(node.get("$ref"), str)


def deref(document: Any, node: Any, pointer: str, *, max_hops: int = 64) -> tuple[Any, str]:
    """Follow a chain of `$ref`s from `node` (found at `pointer`) to a non-reference value.

    Returns the value and its pointer. Raises `PointerError` for a broken or cyclic chain.
    Sibling keywords of a `$ref` are ignored here; schema conversion handles those itself.
    """
    seen: list[str] = []
    while is_ref(node):
        target = node["$ref"]
        if not target.startswith("#"):
            raise PointerError(f"{pointer}: non-local $ref {target!r} left after loading")
        if target in seen or len(seen) >= max_hops:
            raise PointerError(f"{pointer}: $ref cycle {' -> '.join([*seen, target])}")
        seen.append(target)
        node = resolve_pointer(document, target)
        pointer = target
    return node, pointer


def unresolved(node: Any) -> str | None:
    """Why `node` is the placeholder of a `$ref` that could not be resolved; None if it is not.

    A schema reads the placeholder as permissive; a parameter, request body or path item
    cannot, so the frontend asks this before using one.
    """
    if isinstance(node, Mapping) and isinstance(node.get(UNRESOLVED_KEY), str):
        return str(node[UNRESOLVED_KEY])
    return None
