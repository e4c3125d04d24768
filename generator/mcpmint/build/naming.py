"""Names: tool names, argument names, Python identifiers and class names.

Every name that reaches code or the file system comes from here and is built from an allowlist
of characters, so spec text can never smuggle syntax or path separators through a name.
"""

from __future__ import annotations

import hashlib
import keyword
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

TOOL_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
DEFAULT_MAX_TOOL_NAME = 64

# Words a long name can lose first without becoming ambiguous to a reader.
_FILLER_WORDS = frozenset({"a", "an", "the", "of", "by", "for", "with", "and", "to", "in", "on"})
# Words in API titles that say nothing about which API it is.
_GENERIC_TITLE_WORDS = frozenset(
    {"swagger", "openapi", "open", "api", "apis", "rest", "restful", "http", "web", "the", "v1"}
)
_METHOD_ACTIONS = {
    "get": "get",
    "put": "replace",
    "post": "create",
    "patch": "update",
    "delete": "delete",
    "head": "check",
    "options": "options",
    "trace": "trace",
}
# Attribute names a pydantic model or our runtime would shadow.
_RESERVED_ARGUMENTS = frozenset({"self", "cls", "model_config", "model_fields"})


def ascii_fold(text: str) -> str:
    """`naïve` -> `naive`: drop accents, then anything that is still not ASCII."""
    decomposed = unicodedata.normalize("NFKD", text)
    return decomposed.encode("ascii", "ignore").decode("ascii")


def words(text: str) -> list[str]:
    """Lower-case words of an identifier in any casing: `listPets`, `get-user`, `HTTPServer`."""
    text = ascii_fold(text)
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", text)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", text) if w]


def snake(text: str) -> str:
    return "_".join(words(text))


def pascal(text: str) -> str:
    return "".join(w[:1].upper() + w[1:] for w in words(text))


def class_stem(text: str) -> str:
    """The stem of a tool's model classes (`<stem>Arguments`, `<stem>Result`) for a name:
    PascalCase ASCII letters and digits that starts with a letter, so the classes are Python
    identifiers whatever the name holds (`4oD feed` -> `Tool4oDFeed`, `` -> `Tool`)."""
    stem = pascal(text)
    return stem if stem[:1].isalpha() else "Tool" + stem


def class_stems(wanted: Sequence[str]) -> list[str]:
    """The `wanted` stems (one per tool, in the order of the tools' names), each made a
    `class_stem` and told apart from the others: names that differ only in punctuation or
    word breaks (`get_user_2`, `get_user2`) give one stem, which the first keeps; each later
    one gets `V2`, `V3`, ... (never a stem another tool wants as it is). The same tools give
    the same stems on every run."""
    fixed = [class_stem(stem) for stem in wanted]
    wanted_as_is = set(fixed)
    taken: set[str] = set()
    stems: list[str] = []
    for stem in fixed:
        candidate, number = stem, 1
        while candidate in taken or (candidate != stem and candidate in wanted_as_is):
            number += 1
            candidate = f"{stem}V{number}"
        taken.add(candidate)
        stems.append(candidate)
    return stems


def env_name(text: str) -> str:
    """An environment variable word: `bearerAuth` -> `BEARER_AUTH`, `OAuth2` -> `OAUTH2`."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", ascii_fold(text))
    return "_".join(w for w in re.split(r"[^A-Za-z0-9]+", text) if w).upper()


def namespace_from_title(title: str) -> str:
    """`Swagger Petstore` -> `petstore`, `GitHub v3 REST API` -> `github`."""
    # Split on punctuation and spaces only: `GitHub` is one word here, not `git hub`.
    tokens = [w.lower() for w in re.split(r"[^A-Za-z0-9]+", ascii_fold(title)) if w]
    candidates = [w for w in tokens if w not in _GENERIC_TITLE_WORDS and w[0].isalpha()]
    if not candidates:
        return "api"
    return candidates[0][:24]


def is_python_identifier(name: str) -> bool:
    return name.isidentifier() and name.isascii() and not keyword.iskeyword(name)


def argument_name(wire_name: str) -> str:
    """The argument name the model sees for a wire name (G10).

    Names that are already plain identifiers stay as they are (`petId`), so the model can map
    the API's documentation onto the arguments. Others are folded to snake case
    (`X-Request-Id` -> `x_request_id`, `completed_at.after` -> `completed_at_after`). Keywords
    get a trailing underscore (`class_`), leading digits a prefix (`n1st`), and names that
    would start with an underscore lose it: pydantic treats those as private. Returns "" for a
    name with nothing usable in it; the caller reports that as an error.
    """
    if is_python_identifier(wire_name) and not wire_name.startswith("_"):
        name = wire_name
    else:
        name = snake(wire_name)
    if not name:
        # `_` or `$$` still name something; only the empty string names nothing.
        return "arg" if wire_name else ""
    if name[0].isdigit():
        name = "n" + name
    if keyword.iskeyword(name) or keyword.issoftkeyword(name) or name in _RESERVED_ARGUMENTS:
        name += "_"
    return name


def operation_words(operation_id: str, method: str, path: str) -> list[str]:
    """Words of a tool's base name: the operationId's, or an action plus the path's resources."""
    if operation_id and (found := words(operation_id)):
        return found
    segments = [s for s in path.split("/") if s]
    resource = [w for s in segments if not s.startswith("{") for w in words(s)]
    is_item = bool(segments) and segments[-1].startswith("{")
    action = _METHOD_ACTIONS.get(method.lower(), method.lower())
    if method.lower() == "get" and not is_item:
        action = "list"
    return [action, *resource]


def fit(prefix: str, name_words: list[str], max_length: int) -> tuple[str, bool]:
    """Join `prefix` and words with `_` within `max_length`; True when words had to go.

    Filler words go first, then whole words from the end: names stay readable (never
    `lst_pts`), and the words that usually carry the action and the resource survive.
    """
    joined = "_".join([prefix, *name_words]) if prefix else "_".join(name_words)
    if len(joined) <= max_length:
        return joined, False
    kept = [w for w in name_words if w not in _FILLER_WORDS] or name_words[:1]
    while len(kept) > 1 and len("_".join([prefix, *kept])) > max_length:
        kept.pop()
    joined = "_".join([prefix, *kept]) if prefix else "_".join(kept)
    return joined[:max_length].rstrip("_"), True


def short_hash(text: str, length: int = 4) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


@dataclass(frozen=True)
class NameRequest:
    source: str  # where the name comes from, for diagnostics: a location string
    key: str  # stable identity of the source, e.g. "GET /pets" (hashed for disambiguation)
    words: tuple[str, ...]
    # Words that tell this source from another of the same name: its path parameters
    # (`("comic", "id")` for `/{comicId}/info.0.json`), used after "by" on a collision.
    qualifiers: tuple[str, ...] = ()
    # What the previous run's lock records for a tool of this source ("GET /pets"): on a
    # collision, the source that had the name keeps it.
    endpoint: str = ""


@dataclass(frozen=True)
class NameCollision:
    """Sources that gave the same name, and the name each one got instead."""

    name: str
    sources: tuple[str, ...]
    resolved: tuple[str, ...] = ()  # the names given, in the order of `sources`


def assign_tool_names(
    namespace: str,
    requests: Iterable[NameRequest],
    max_length: int = DEFAULT_MAX_TOOL_NAME,
    previous: Mapping[str, str] | None = None,
) -> tuple[dict[str, str], list[NameCollision]]:
    """Map each request's key to a unique tool name; never fails.

    Sources whose full names are equal (two operations with one operationId, `get-user` and
    `getUser` (G9), derived names of two paths) are told apart deterministically, whatever
    the order of the spec: first by their path parameters (`get_comic` and
    `get_comic_by_comic_id`), then, among those still equal, the one whose key sorts first
    keeps the name and each other gets a short hash of its key (stable across regenerations).
    `previous`: the endpoint each name had in the previous run's lock (tools.lock.json); a
    source that had the name keeps it, so an operation added later never renames an older
    one. Each such group is returned as a collision, for a warning. Names that only collide
    because they were shortened to fit all get the short hash of their key.
    """
    previous = previous or {}
    chosen = sorted(requests, key=lambda r: r.key)
    words = {r.key: list(r.words) for r in chosen}
    groups: dict[str, list[NameRequest]] = {}
    for request in chosen:
        groups.setdefault("_".join([namespace, *request.words]), []).append(request)
    collided = {name: group for name, group in groups.items() if len(group) > 1}
    for group in collided.values():
        for request in group:
            if request.qualifiers:
                words[request.key] += ["by", *request.qualifiers]
    fitted = {key: fit(namespace, value, max_length) for key, value in words.items()}
    names: dict[str, str] = {}
    taken: set[str] = set()
    by_name: dict[str, list[str]] = {}
    for key, (name, _) in fitted.items():
        by_name.setdefault(name, []).append(key)
    endpoints = {r.key: r.endpoint for r in chosen}
    for name, keys in sorted(by_name.items()):
        shortened = any(fitted[key][1] for key in keys)
        had = [key for key in keys if endpoints[key] and endpoints[key] == previous.get(name)]
        keeper = had[0] if len(had) == 1 else sorted(keys)[0]
        for key in sorted(keys):
            if len(keys) == 1 or (key == keeper and not shortened):
                names[key] = name
            else:
                names[key] = _suffixed(name, key, max_length)
            taken.add(names[key])
    # A suffixed name may still meet another's (rare): longer hashes until none does.
    counts: dict[str, int] = {}
    for name in names.values():
        counts[name] = counts.get(name, 0) + 1
    for key in sorted(names):
        length = 4
        while counts[names[key]] > 1 and length < 16:
            counts[names[key]] -= 1
            length += 2
            names[key] = _suffixed(fitted[key][0], key, max_length, length)
            counts[names[key]] = counts.get(names[key], 0) + 1
    collisions = [
        NameCollision(
            name,
            tuple(r.source for r in group),
            tuple(names[r.key] for r in group),
        )
        for name, group in sorted(collided.items())
    ]
    return names, collisions


def _suffixed(name: str, key: str, max_length: int, length: int = 4) -> str:
    suffix = "_" + short_hash(key, length)
    return name[: max_length - len(suffix)].rstrip("_") + suffix


def unique(name: str, taken: set[str], separator: str = "_") -> str:
    """`name`, or `name_2`, `name_3`, ... whichever is free (`name2` with no `separator`, for
    a PascalCase class name); records the result in `taken`."""
    candidate, n = name, 2
    while candidate in taken:
        candidate = f"{name}{separator}{n}"
        n += 1
    taken.add(candidate)
    return candidate
