"""Finding tools by words: a BM25F index over the catalogue, for dynamic mode.

Each tool is a set of weighted fields: its title (the summary: what the tool does), its name
(without the namespace's words, a shortened name's hash and the `post` or `put` that a name
made of method and path starts with), its tags, its path's resources (the literal segments,
without versions and parameters; `me` and `self` read "current"), its parameters' names, and
its description. Each field is length-normalised on its own (BM25F),
so a long description neither drowns a short title nor penalises its tool.

Words are lower-cased, split at punctuation and camelCase, stemmed by a few suffix rules (and
a table of irregular past forms: sent, made, hidden) and stripped of stop words. A query is
read as a person writes it: a phrase means one action ("get rid of" deletes, "take bob off
the list" removes, "turn it on" enables); values are not words to match (a number, an id
such as `cus_OaR8x1` or `3f9a2b1`, a version, a quoted string); a capitalised word inside it
is most often a name and counts for less, as do words joined by a hyphen or an underscore
(`new-checkout`, `ops_schedule`) unless the catalogue joins them too (`on-call`) and the words
of a clause of time ("before pushing", "when files change"); "called" and "named" only say
that a name follows ("a team called infra"); "logged in" is the caller's session; and each word also
matches its general synonyms at a lower weight (stop ~ cancel, show ~ list, send ~ transfer,
spend ~ cost ~ billing): the same everyday words for every API, not a list per API. A word
of a tool answers one word of the query: "invite a new user" does not find "add" twice. A
verb after a determiner is a state ("the open incidents"), one in the past tense inside the
query describes ("the task I created"), and neither is the action asked for; nor is a verb
in a name ("into Archive") or in a clause of time.

Preferences break near ties the way a person would: a tool whose title holds what was asked
and little else; the kind of action the query's leading verb asks for (a question asks for
a read); the object's own tool before a related object's (a path that goes on past the last
resource the query names: "delete the branch" is not "delete the branch's protection"); a
list when many are asked for ("the open pull requests", "who is a member": the people, however
many), one item when one is; a tool that
undoes (delete, end, disable) only when undoing is asked; and a narrow scope before a wide
one unless the wide one is asked for ("for an enterprise", "for all namespaces", "in every
namespace", "admin"), the scope read from the name and path.

Pure Python, built when the server starts (GitHub's 1,223 tools: 0.1 s for the index); a
search takes a few milliseconds to a few tens of them. The word lists (stop words, short
forms, irregular verbs, synonyms, phrases, verbs) are in `words.py`. Over 600 lines: the
query's reading and the preferences, each a few lines beside the index that they serve.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .words import (
    HINT_WORDS,
    IRREGULAR_WORDS,
    PHRASE_LINES,
    QUESTION_WORDS,
    SHORT_FORMS,
    STOP_WORDS,
    SYNONYM_GROUPS,
    UNDOING_WORDS,
    VERB_WORDS,
)

__all__ = ["Document", "SearchIndex", "plain_query", "query_terms", "terms"]

# BM25's usual constants: term frequency saturation and length normalisation.
_K1 = 1.6
_B = 0.75
_FIELD_WEIGHTS = {
    "title": 3.0,
    "name": 2.0,
    "tags": 1.5,
    "path": 1.5,
    "parameters": 0.25,
    "description": 1.0,
}
# The fields that say what a tool *is* (a match there is what was asked for).
_STRONG = ("title", "name", "path", "tags")
# Short fields where a repeated word adds nothing: its presence is what counts.
_ONCE = frozenset({"name", "title", "tags", "path", "parameters"})
# A synonym counts for this much of the word itself.
_SYNONYM_WEIGHT = 0.6
# A capitalised word inside a query (a name, most often) counts for this much.
_NAME_WEIGHT = 0.5
# A question word or "my" hints at what is wanted (a read, the current user), weakly.
_HINT_WEIGHT = 0.3
# How much a tool's score grows with the share of the query its strong fields hold, and
# with the share of its title the query asked for; and what each preference costs the tool
# that does not meet it (see `SearchIndex.search`).
_COVERED = 1.0
_PRECISE = 2.0
_OTHER_OBJECT = 0.8
_OTHER_VERB = 0.7
_NO_VERB = 0.75
_WIDER_SCOPE = 0.85
_UNDO_UNASKED = 0.8
_ONE_FOR_MANY = 0.8
_MANY_FOR_ONE = 0.9
_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|[a-z]+|[0-9]+")
# A shortened name ends in a hash of four hex digits after a truncated word; a hash with a
# digit in it, so that a word made of a-f ("feed", "added") is never taken for one.
_HASH_SUFFIX = re.compile(r"(?:_[A-Za-z0-9]*)?_(?=[a-f]*[0-9])[0-9a-f]{4,8}$")
_PATH_PARAMETER = re.compile(r"\{[^}]*\}")
_VERSION = re.compile(r"^v?[0-9]+(\.[0-9]+)*$|^(api|rest)$", re.IGNORECASE)
# A quoted value in a query ("alpine", 'In review') names data, not the operation.
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|(?<![A-Za-z])'[^']*'(?![A-Za-z])")

_STOP = frozenset(STOP_WORDS.split())


def _synonyms() -> dict[str, tuple[str, ...]]:
    found: dict[str, list[str]] = {}
    for line in SYNONYM_GROUPS.strip().splitlines():
        group = [_normal(word) for word in line.split()]
        for word in group:
            found.setdefault(word, [])
            for other in group:
                if other != word and other not in found[word]:
                    found[word].append(other)
    return {word: tuple(others) for word, others in found.items()}


def _stem(word: str) -> str:
    """A light suffix stripper: plurals, -ing, -ed and a final e, so that "create",
    "creates", "created" and "creating" meet; enough for the words people use."""
    stripped = False
    if len(word) > 4 and word.endswith("ies"):
        word, stripped = word[:-3] + "y", False
    elif len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes", "zes")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 6 and word.endswith("ility"):
        word = word[:-5] + "le"  # availability -> available
    elif len(word) > 5 and word.endswith("ee") and not word.endswith(("free", "tree")):
        word = word[:-2]  # assignee -> assign, employee -> employ
    if len(word) > 6 and word.endswith("ly"):
        word = word[:-2]  # recently -> recent, monthly -> month
    if len(word) > 7 and word.endswith("ship"):
        word = word[:-4]  # membership -> member
    elif len(word) > 9 and word.endswith("ation"):
        word = word[:-5]  # configuration -> configur(e), invitation -> invit(e)
    elif len(word) > 7 and word.endswith(("ion", "ment")):
        word = word[: -3 if word.endswith("ion") else -4]  # connection, deployment
    elif len(word) > 6 and word.endswith("or") and not word.endswith("oor"):
        word = word[:-2]  # contributor -> contribut(e), collaborator
    if len(word) > 5 and word.endswith("ing"):
        word, stripped = word[:-3], True
    elif len(word) > 4 and word.endswith("ied"):
        word = word[:-3] + "y"
    elif len(word) > 4 and word.endswith("ed") and not word.endswith("eed"):
        word, stripped = word[:-2], True
    if stripped and len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]  # running -> run, stopped -> stop
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def _normal(word: str) -> str:
    """The index term of one word (lower-cased, stemmed, short forms made long); memoised:
    a catalogue says the same few thousand words over and over."""
    found = _NORMAL.get(word)
    if found is None:
        lower = word.lower()
        stem = _stem(_IRREGULAR_VERBS.get(lower, lower))
        long = _SHORT_STEMS.get(stem)
        found = stem if long is None else _stem(long)
        if len(_NORMAL) < _NORMAL_MAX:  # queries bring new words: the memo stays bounded
            _NORMAL[word] = found
    return found


_NORMAL: dict[str, str] = {}
_NORMAL_MAX = 100_000
# The short forms by their stems: a word is stemmed before it is looked up ("organisation"
# is "organis" by then).
_SHORT_STEMS = {_stem(short): long for short, long in SHORT_FORMS.items()}
_IRREGULAR_VERBS = dict(pair.split(":") for pair in IRREGULAR_WORDS.split())


_SYNONYMS = _synonyms()
_HINTS = {word: tuple(_normal(w) for w in hints) for word, hints in HINT_WORDS.items()}


def terms(text: str) -> list[str]:
    """The index terms of `text`, in order (repeats kept). Numbers and single letters are
    not terms ("v3 Mail Send" is about mail and sending; a query's numbers are values)."""
    return [
        _normal(raw)
        for raw in _WORD.findall(text)
        if len(raw) > 1 and not raw.isdigit() and raw.lower() not in _STOP
    ]


def _is_value(chunk: str) -> bool:
    """A query chunk that names a value rather than a word: it holds a digit (an issue
    number, `cus_OaR8x1`, `3f9a2b1`, `v1.2.0`, `PROJ-123`), an `@` (an address) or a dot or
    colon inside a word (`app.py`, `example.com`, `nginx:latest`, a URL)."""
    return any(ch.isdigit() for ch in chunk) or "@" in chunk or bool(_INNER.search(chunk))


_INNER = re.compile(r"\w[.:]\w")
# Words joined by a hyphen or an underscore: a name (`new-checkout`, `ops_schedule`,
# `STRIPE_KEY`) unless the catalogue joins the same words (`on-call`, `brute-force`).
_JOINED = re.compile(r"[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)+")


def _pairs(text: str) -> set[tuple[str, str]]:
    """Each two neighbouring words of `text`, lower-cased and stemmed, stop words kept."""
    words = [_stem(raw.lower()) for raw in _WORD.findall(text)]
    return set(itertools.pairwise(words))


# "logged in", "signed in": the caller's session, not a log.
_SIGNED_IN = re.compile(r"\b(?:log|logged|sign|signed)[ -]in\b", re.IGNORECASE)


_MAX_GAP = 5


def _phrases() -> dict[str, list[tuple[tuple[str, ...], tuple[bool, ...], bool, str]]]:
    """Each phrase by its first word's term: the words after it, which of them stay, whether a gap
    comes before them, and the words it means."""
    found: dict[str, list[tuple[tuple[str, ...], tuple[bool, ...], bool, str]]] = {}
    for line in PHRASE_LINES.strip().splitlines():
        said, _, meant = line.partition("=")
        first, *rest = said.split()
        gap = bool(rest) and rest[0] == "..."
        rest = rest[1:] if gap else rest
        words = tuple(w.strip("[]") for w in rest)
        kept = tuple(w.startswith("[") for w in rest)
        found.setdefault(_normal(first), []).append((words, kept, gap, meant.strip()))
    return found


_PHRASES = _phrases()


def _rephrase(query: str) -> str:
    """`query` with its phrases replaced by what they mean ("get rid of the old key": "delete
    the old key"); the other words as they were."""
    chunks = query.split()
    plain = [c.lower().strip(",.;:!?") for c in chunks]
    out: list[str] = []
    place = 0
    while place < len(chunks):
        word = plain[place]
        match = None
        for words, kept, gap, meant in _PHRASES.get(_normal(word), ()):
            for skip in range(_MAX_GAP + 1 if gap else 1):
                start = place + 1 + skip
                if tuple(plain[start : start + len(words)]) == words:
                    match = (start, words, kept, meant)
                    break
            if match:
                break
        if match is None:
            out.append(chunks[place])
            place += 1
            continue
        start, words, kept, meant = match
        out.append(meant)
        out.extend(chunks[place + 1 : start])
        out.extend(chunks[start + i] for i in range(len(words)) if kept[i])
        place = start + len(words)
    return " ".join(out)


def plain_query(query: str) -> str:
    """The query without its values (numbers, ids, quoted strings): the words that say what
    is wanted, as semantic search embeds them."""
    return " ".join(c for c in _QUOTED.sub(" ", query).split() if not _is_value(c))


def query_terms(query: str) -> list[tuple[str, tuple[tuple[str, float], ...]]]:
    """Each word of `query` that counts, with what it matches: itself (weight 1) and its
    synonyms (less). Values (numbers, ids, versions, quoted strings) are left out."""
    text = _rephrase(_SIGNED_IN.sub("authenticated", _QUOTED.sub(" ", query)))
    wanted: dict[str, tuple[tuple[str, float], ...]] = {}
    before = ""
    clause = False
    for place, chunk in enumerate(text.split()):
        if _is_value(chunk):
            before = ""
            continue
        if place > 0 and chunk.lower().strip(",.") in _CLAUSE:
            clause = True  # what follows is a circumstance or a later step; "when was": a question
            continue
        # A capitalised word inside a sentence is most often a name ("the Legal folder",
        # "is Maria online"): a value more than a word of what to do; it counts for less.
        named = place > 0 and chunk[:1].isupper() and not chunk.isupper()
        for raw in _WORD.findall(chunk):
            lower = raw.lower()
            if len(lower) < 2:
                continue
            hints = _HINTS.get(lower)
            if hints is not None:
                key = "?" + lower
                if key not in wanted:
                    wanted[key] = tuple((h, _HINT_WEIGHT) for h in hints)
                continue
            if lower in _STOP:
                continue
            word = _normal(raw)
            said = next((k for k, m in wanted.items() if any(word == t for t, _ in m)), None)
            if said is not None:  # "look up the details": one wish said twice, both exact
                wanted[said] = tuple((t, 1.0 if t == word else w) for t, w in wanted[said])
                continue
            weight = _NAME_WEIGHT if named or clause else 1.0
            matches = [(word, weight)]
            # A verb that is not the action asked for: a state after a determiner ("the open
            # incidents"), a past tense inside the query ("the task I created"), a name ("into
            # Archive") or a later step ("tag it before pushing"): itself only, and no verb.
            described = before in _DETERMINERS or (place > 0 and lower.endswith("ed"))
            if word in _VERBS and (named or clause or described):
                wanted[word + _STATE] = tuple(matches)
                continue
            matches += [(s, weight * _SYNONYM_WEIGHT) for s in _SYNONYMS.get(word, ())]
            wanted[word] = tuple(matches)
        before = chunk.lower()
    return list(wanted.items())


_DETERMINER_WORDS = "the all my our any every only these those its their your"
_DETERMINERS = frozenset(_DETERMINER_WORDS.split())
# Words that open a clause of time ("before pushing", "when files change"): its words are
# the circumstances of what is asked, and count for less.
_CLAUSE_WORDS = "before after when whenever while until"
_CLAUSE = frozenset(_CLAUSE_WORDS.split())
# The mark of a verb said as a state: the key is then no verb.
_STATE = "~"


_VERBS = frozenset(_normal(word) for word in VERB_WORDS.split())
_METHOD_VERBS = {
    "GET": ("get", "list"),
    "POST": ("create",),
    "PUT": ("update", "set"),
    "PATCH": ("update",),
    "DELETE": ("delete",),
}


_QUESTION = frozenset(QUESTION_WORDS.split())
_READ = frozenset({_normal("get"), _normal("list")})


def _verbs(
    query: str, wanted: list[tuple[str, tuple[tuple[str, float], ...]]]
) -> tuple[set[str], set[str]]:
    """The terms of the query's leading verb (a question's: get, list) and of all its verbs:
    "show the disputes opened against me" shows; "opened" only describes."""
    words = _WORD.findall(query)
    every = {term for key, matches in wanted if key in _VERBS for term, _ in matches}
    if words and words[0].lower() in _QUESTION:
        return set(_READ), every | _READ
    for key, matches in wanted:
        if key in _VERBS:
            return {term for term, _ in matches}, every
        if key.startswith("?") and _normal(key[1:]) in _VERBS:  # "show": a read
            return {term for term, _ in matches if term in _VERBS}, every | _READ
    return set(), every


_UNDOING = frozenset(_normal(word) for word in UNDOING_WORDS.split())

# Words that widen a tool's scope beyond the object asked about: a tool named for one of
# them comes after its narrower twin unless the query says the word too.
_SCOPE_WORDS = frozenset(
    _normal(w) for w in ("enterprise", "all", "global", "organization", "admin", "administrator")
)


@dataclass(frozen=True)
class Document:
    """What the index knows of one tool."""

    name: str
    title: str
    description: str
    tags: Sequence[str] = ()
    path: str = ""
    parameters: Sequence[str] = ()
    namespace: str = ""
    method: str = ""


def _name_text(name: str, namespace: str, method: str = "") -> str:
    """The words of a tool's name: without the namespace, a shortened name's hash, or the
    HTTP method a name made from the method and path starts with (`box_put_groups_id`:
    "put" is how, not what; the method is read as an action on its own)."""
    if namespace and name.startswith(namespace + "_"):
        name = name[len(namespace) + 1 :]
    if method.lower() in ("put", "post") and name.lower().startswith(method.lower() + "_"):
        name = name[len(method) + 1 :]
    return _HASH_SUFFIX.sub("", name)


def _path_parts(path: str) -> tuple[str, tuple[frozenset[str], ...]]:
    """The path's resources (its literal segments, without versions) as text, and each
    one's terms in order."""
    segments = [_SELF.get(s.lower(), s) for s in path.strip("/").split("/") if s]
    literal = [s for s in segments if not _PATH_PARAMETER.search(s) and not _VERSION.match(s)]
    return " ".join(literal), tuple(frozenset(terms(s)) for s in literal)


# A path that names the caller (`/users/me`, `/accounts/self`) reads the current user.
_SELF = {"me": "current", "self": "current", "myself": "current", "my": "current"}


def _beyond_asked(segments: tuple[frozenset[str], ...], asked: set[str]) -> bool:
    """Whether the path goes on past the last resource the query names, to one it never
    names: `/customers/{c}/cards/{id}` for "the customer's details", `/branches/{b}/protection`
    for "delete the branch". A path that names nothing asked says nothing either way."""
    last = max((i for i, seg in enumerate(segments) if seg & asked), default=-1)
    return last >= 0 and any(not seg & asked for seg in segments[last + 1 :])


def _actions(title: str, name: str) -> frozenset[str]:
    """What a tool does: its title's leading verb ("Check if a user can be assigned" checks),
    else every word of its title and name (a title that starts with a noun)."""
    words = terms(title)
    if words and words[0] in _VERBS:
        return frozenset(words[:1])
    return frozenset(words) | frozenset(terms(name))


def _is_plural(word: str) -> bool:
    """Whether `word` is an English plural ("containers", "policies"; not "status", "access")."""
    lower = word.lower()
    if len(lower) < 4 or not lower.endswith("s") or lower.endswith(("ss", "us", "is")):
        return False
    return lower.endswith("ies") or _stem(lower) == _stem(lower[:-1])


def _plurals(query: str) -> set[str]:
    """The terms of the query's plural words (values left out)."""
    text = _QUOTED.sub(" ", query)
    return {
        _normal(raw)
        for chunk in text.split()
        if not _is_value(chunk)
        for raw in _WORD.findall(chunk)
        if raw.lower() not in _STOP and _is_plural(raw)
    }


def _read_of(
    method: str, path: str, segments: tuple[frozenset[str], ...]
) -> tuple[str, bool] | None:
    """The object a read, an update or a delete acts on (the last term of its path's last
    resource) and whether it acts on a collection (the path ends at that resource, not at a
    parameter after it): "remove a tag" is not "remove the tags"."""
    if method.upper() not in ("GET", "PUT", "PATCH", "DELETE") or not segments:
        return None
    last = [s for s in path.strip("/").split("/") if s]
    literal = [s for s in last if not _PATH_PARAMETER.search(s) and not _VERSION.match(s)]
    words = terms(literal[-1]) if literal else []
    if not words:
        return None
    return words[-1], not _PATH_PARAMETER.search(last[-1])


class SearchIndex:
    """BM25F over weighted fields; `search` answers with tool names, best first."""

    def __init__(self, documents: Iterable[Document]) -> None:
        self._names: list[str] = []
        # Per tool, per field: term -> count; and the field's length in terms.
        self._fields: list[dict[str, Counter[str]]] = []
        self._terms_of: list[set[str]] = []
        self._lengths: list[dict[str, int]] = []
        self._segments: list[tuple[frozenset[str], ...]] = []
        self._scopes: list[frozenset[str]] = []
        self._actions: list[frozenset[str]] = []
        # The object a read, update or delete acts on (the last word of its path's last
        # resource), and whether many (the path ends at a resource) or one (at a parameter).
        self._reads: list[tuple[str, bool] | None] = []
        # Every two neighbouring words of the tools' titles, names, tags and paths: what
        # the catalogue writes joined (`on-calls`, `identity-provider`) is a word, not a name.
        self._pairs: set[tuple[str, str]] = set()
        postings: dict[str, set[int]] = {}
        totals: Counter[str] = Counter()
        for index, document in enumerate(documents):
            resources, segments = _path_parts(document.path)
            texts = {
                "title": document.title,
                "name": _name_text(document.name, document.namespace, document.method),
                "tags": " ".join(document.tags),
                "path": resources,
                "parameters": " ".join(document.parameters),
                "description": document.description,
            }
            bags = {field: Counter(terms(text)) for field, text in texts.items()}
            self._names.append(document.name)
            self._fields.append(bags)
            self._terms_of.append({t for bag in bags.values() for t in bag})
            self._lengths.append({field: sum(bag.values()) for field, bag in bags.items()})
            self._segments.append(segments)
            self._scopes.append(frozenset(bags["name"]) | frozenset(bags["path"]))
            method = tuple(_normal(v) for v in _METHOD_VERBS.get(document.method.upper(), ()))
            self._actions.append(_actions(texts["title"], texts["name"]) | set(method))
            self._reads.append(_read_of(document.method, document.path, segments))
            for field in ("title", "name", "tags"):
                self._pairs |= _pairs(texts[field])
            self._pairs |= _pairs(document.path)
            for field, bag in bags.items():
                totals[field] += sum(bag.values())
                for term in bag:
                    postings.setdefault(term, set()).add(index)
        count = len(self._names)
        self._averages = {
            field: max(totals[field] / max(count, 1), 1.0) for field in _FIELD_WEIGHTS
        }
        self._postings = {term: sorted(docs) for term, docs in postings.items()}
        self._idf = {
            term: math.log(1.0 + (count - len(docs) + 0.5) / (len(docs) + 0.5))
            for term, docs in postings.items()
        }

    def __len__(self) -> int:
        return len(self._names)

    @property
    def names(self) -> list[str]:
        """The tools' names, in the index's order (the keys of `scores`)."""
        return self._names

    def _fields_of(self, index: int) -> set[str]:
        """Every term of tool `index`."""
        found = self._terms_of[index]
        return found

    def _joined(self, match: re.Match[str]) -> str:
        """Words joined in a query: kept if the catalogue joins them too, else a value."""
        pairs = _pairs(match.group(0))
        if pairs and pairs <= self._pairs:
            return match.group(0)
        return "-".join(part.capitalize() for part in re.split(r"[-_]", match.group(0)))

    def _term_score(self, index: int, term: str) -> tuple[float, bool]:
        """BM25F's saturated, weighted frequency of `term` in tool `index` (times its idf),
        and whether a strong field holds it."""
        weighted = 0.0
        strong = False
        fields = self._fields[index]
        lengths = self._lengths[index]
        for field, weight in _FIELD_WEIGHTS.items():
            frequency = fields[field].get(term, 0)
            if not frequency:
                continue
            if field in _ONCE:
                frequency = 1  # "workflow runs for a workflow" is not twice as apt
            strong = strong or field in _STRONG
            norm = 1.0 - _B + _B * lengths[field] / self._averages[field]
            weighted += weight * frequency / norm
        return self._idf[term] * weighted / (_K1 + weighted), strong

    def search(self, query: str, limit: int = 8, allowed: Iterable[str] | None = None) -> list[str]:
        """The names of the `limit` best matches of `query` (ties by name), among `allowed`."""
        scores = self.scores(query, allowed)
        ranked = sorted(scores, key=lambda i: (-scores[i], self._names[i]))
        return [self._names[i] for i in ranked[:limit]]

    def scores(self, query: str, allowed: Iterable[str] | None = None) -> dict[int, float]:
        """The score of each tool (by its place in the index) that matches `query`, among
        `allowed`; a tool that matches no word is left out."""
        keep = None if allowed is None else frozenset(allowed)
        query = _JOINED.sub(self._joined, query)
        wanted = query_terms(query)
        candidates: set[int] = set()
        for _, matches in wanted:
            for term, _weight in matches:
                candidates.update(self._postings.get(term, ()))
        asked = {term for _, matches in wanted for term, _ in matches}
        words = [key for key in (k for k, _ in wanted) if not key.startswith("?")]
        # The verbs asked for: the leading one (a question asks for a read), and the others.
        lead, verbs = _verbs(query, wanted)
        plural = _plurals(query)
        if [w.lower() for w in _WORD.findall(query)[:1]] == ["who"]:
            plural |= asked  # "who is a member": the people, however many
        scores: dict[int, float] = {}
        for index in candidates:
            if keep is not None and self._names[index] not in keep:
                continue
            total = 0.0
            covered = 0.0
            # Each word of the tool answers one word of the query: a word said (an exact
            # match) first, then synonyms among the words left ("invite a new user" does not
            # find "add" twice, once for "invite" and once for "new").
            used: set[str] = set()
            for exact in (True, False):
                for _, matches in wanted:
                    best, best_strong, best_term = 0.0, 0.0, ""
                    if exact != (matches[0][0] in self._fields_of(index)):
                        continue
                    for term, weight in matches:
                        if term not in self._idf or (term in used and weight < 1.0):
                            continue
                        score, strong = self._term_score(index, term)
                        if weight * score > best:
                            best, best_term = weight * score, term
                        if strong and score > 0.0:
                            best_strong = max(best_strong, weight)
                    used.add(best_term)
                    total += best
                    covered += best_strong
            if total <= 0.0:
                continue
            # A tool whose title, name or path holds every word asked for is what was asked
            # for; one whose title says little else is more so ("Create a pull request" over
            # "Create a reaction for a pull request review comment").
            title = self._fields[index]["title"]
            precise = sum(n for t, n in title.items() if t in asked) / max(sum(title.values()), 1)
            total *= (1.0 + _COVERED * covered / max(len(wanted), 1)) * (1.0 + _PRECISE * precise)
            # The object's own tool before a related object's.
            if _beyond_asked(self._segments[index], asked):
                total *= _OTHER_OBJECT
            # An undoing action (delete, end, remove) only when one is asked for.
            if self._actions[index] & _UNDOING and not verbs & _UNDOING:
                total *= _UNDO_UNASKED
            # The kind of action asked for: the leading verb's, or at least another's.
            if lead and not lead & self._actions[index]:
                total *= _OTHER_VERB if verbs & self._actions[index] else _NO_VERB
            # Many things asked for ("the open pull requests"): a list before a single read.
            read = self._reads[index]
            if read is not None and read[0] in plural:
                total *= 1.0 if read[1] else _ONE_FOR_MANY
            elif read is not None and read[0] in asked and read[1]:
                total *= _MANY_FOR_ONE
            # A narrow scope before a wide one, unless asked.
            if (self._scopes[index] & _SCOPE_WORDS) - set(words):
                total *= _WIDER_SCOPE
            scores[index] = total
        return scores
