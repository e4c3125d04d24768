"""Finding tools by words: a small BM25 index over the catalogue, for dynamic mode.

Each tool is a bag of words drawn from its name, title, tags, path and description, the first
four weighted above the description (a summary says what a tool does; a long description
mostly says how). Words are lower-cased, split at punctuation and camelCase, stemmed with a
few suffix rules and stripped of stop words, so that "list the issues of a repository" meets
"List repository issues". Pure Python, built when the server starts: a few milliseconds per
thousand tools.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Document", "SearchIndex", "terms"]

# BM25's usual constants: term frequency saturation and length normalisation.
_K1 = 1.2
_B = 0.75
_FIELD_WEIGHTS = {"name": 3.0, "title": 3.0, "tags": 2.0, "path": 1.5, "description": 1.0}
# Short fields where a repeated word adds nothing: its presence is what counts.
_ONCE = frozenset({"name", "title", "tags"})
_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|[a-z]+|[0-9]+")
# A word list reads better as words.
_STOP_WORDS = (
    "a an and any are as at be by can do does for from give how i in into is it its "
    "me my of on or our please show that the their them these this those to use we "
    "what which who whom whose with you your"
)
_STOP = frozenset(_STOP_WORDS.split())
# Short forms APIs write in names and paths ({repo}, /orgs/) next to the long forms people
# say, and verbs that mean the same to an API: both sides of the index meet on the right.
_SHORT_FORMS = {
    "repo": "repository",
    "org": "organization",
    "organisation": "organization",
    "config": "configuration",
    "env": "environment",
    "auth": "authentication",
    "info": "information",
    "msg": "message",
    "pr": "pull",
    "app": "application",
    "dir": "directory",
    "id": "identifier",
    # Verbs people use for the same operation.
    "remove": "delete",
    "erase": "delete",
    "retrieve": "get",
    "fetch": "get",
    "modify": "update",
    "edit": "update",
    "change": "update",
    "make": "create",
    "new": "create",
    "write": "create",
    "add": "create",
}


def _stem(word: str) -> str:
    """A light suffix stripper: plurals, -ing, -ed; enough to meet the words people use."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed") and not word.endswith("eed"):
        return word[:-2] if not word.endswith("ied") else word[:-3] + "y"
    return word


def terms(text: str) -> list[str]:
    """The index terms of `text`, in order (repeats kept)."""
    found = []
    for raw in _WORD.findall(text):
        word = raw.lower()
        if word in _STOP:
            continue
        word = _stem(word)
        found.append(_SHORT_FORMS.get(word, word))
    return found


@dataclass(frozen=True)
class Document:
    """What the index knows of one tool."""

    name: str
    title: str
    description: str
    tags: Sequence[str] = ()
    path: str = ""


class SearchIndex:
    """BM25F over weighted fields; `search` answers with tool names, best first.

    Each field is length-normalised on its own (BM25F), so a long description neither drowns
    the words of a short title nor penalises the tool it belongs to.
    """

    def __init__(self, documents: Iterable[Document]) -> None:
        self._names: list[str] = []
        # Per tool, per field: term -> count; and the field's length in terms.
        self._fields: list[dict[str, Counter[str]]] = []
        postings: dict[str, set[int]] = {}
        totals: Counter[str] = Counter()
        for index, document in enumerate(documents):
            texts = {
                "name": document.name,
                "title": document.title,
                "tags": " ".join(document.tags),
                "path": document.path,
                "description": document.description,
            }
            bags = {field: Counter(terms(text)) for field, text in texts.items()}
            self._names.append(document.name)
            self._fields.append(bags)
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

    def search(self, query: str, limit: int = 8, allowed: Iterable[str] | None = None) -> list[str]:
        """The names of the `limit` best matches of `query` (ties by name), among `allowed`."""
        keep = None if allowed is None else frozenset(allowed)
        scores: dict[int, float] = {}
        query_terms = list(dict.fromkeys(terms(query)))
        for term in query_terms:
            idf = self._idf.get(term)
            if idf is None:
                continue
            for index in self._postings[term]:
                weighted = 0.0
                for field, bag in self._fields[index].items():
                    frequency = bag.get(term, 0)
                    if frequency and field in _ONCE:
                        frequency = 1  # "workflow runs for a workflow" is not twice as apt
                    if frequency:
                        length = sum(bag.values()) / self._averages[field]
                        weighted += _FIELD_WEIGHTS[field] * frequency / (1.0 - _B + _B * length)
                scores[index] = scores.get(index, 0.0) + idf * weighted / (_K1 + weighted)
        # A tool whose name or title holds every word asked for is what was asked for, and
        # one whose title says nothing else is more so ("Create a pull request" over "Create
        # a reaction for a pull request review comment"): both shares scale the score.
        wanted = set(query_terms)
        for index in scores:
            fields = self._fields[index]
            covered = sum(1 for t in wanted if t in fields["name"] or t in fields["title"])
            title = fields["title"]
            precise = sum(1 for t in title if t in wanted) / len(title) if title else 0.0
            scores[index] *= (1.0 + covered / max(len(wanted), 1)) * (1.0 + 0.5 * precise)
        ranked = sorted(scores, key=lambda i: (-scores[i], self._names[i]))
        names = [self._names[i] for i in ranked if keep is None or self._names[i] in keep]
        return names[:limit]
