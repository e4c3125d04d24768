"""The stage cache: the previous run's expensive results, reused when their inputs are the same.

Two stages dominate a cold run on a large spec (docs/benchmarks.md): strict validation of the
whole document (openapi-spec-validator) and the typed models (datamodel-code-generator). Each
is a pure function of inputs we can digest, so its result is stored under a key made of the
stage's name, the generator identity (mcpmint's own code and templates), the versions of the
third-party code that did the work, and a digest of the stage's inputs. A hit returns exactly
what a cold run would compute, so the cache can only save time, never change bytes.

It lives in `<output>/.mcpmint/cache/`, beside the ownership manifest but not listed in it:
it is not a generated file, `--check` never looks at it, and a `.gitignore` of its own keeps
it out of version control. A missing, unreadable or corrupt entry is a miss (the stage runs
cold). Each run keeps the entries it used and, per stage, the `KEEP` most recently used
others, so undoing a change is a hit too, and the folder stays the size of a few runs.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

from mcpmint.resources import generator_identity

CACHE_DIR = ".mcpmint/cache"
_FORMAT = 1  # bump when the entry layout changes
_SUFFIX = ".json"
KEEP = 3  # entries per stage kept besides this run's (least recently used go first)


@functools.cache
def library_version(distribution: str) -> str:
    """The installed version of a third-party distribution ("" when it is not installed).
    Read once per process: each reading scans the installed distributions."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return ""


def cache_key(stage: str, inputs: Any, *libraries: str) -> str:
    """A digest of everything the stage's result depends on; `inputs` must be JSON data."""
    identity = [
        _FORMAT,
        stage,
        generator_identity(),
        [(name, library_version(name)) for name in libraries],
        inputs,
    ]
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class StageCache:
    """Entries `<stage>-<key>.json` in one folder; `folder=None` is a cache that never hits."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._used: dict[str, Any] = {}  # file name -> value, everything this run used
        self._fresh: set[str] = set()  # file names computed this run, to be (re)written

    def get(self, stage: str, key: str) -> Any | None:
        """The stored value, or None on a miss (absent, unreadable, corrupt or foreign)."""
        name = f"{stage}-{key}{_SUFFIX}"
        if name in self._fresh:  # put by this run
            return self._used[name]
        if self.folder is None:
            return None
        try:
            # orjson reads it three times faster than json; the values are strings, lists
            # and objects (no number that orjson would read differently).
            entry = orjson.loads((self.folder / name).read_bytes())
        except (OSError, ValueError):  # orjson.JSONDecodeError is a ValueError
            return None
        # The key is stored inside too: a renamed or truncated-then-rewritten file never hits.
        if not isinstance(entry, dict) or entry.get("key") != key or "value" not in entry:
            return None
        self._used[name] = entry["value"]
        return entry["value"]

    def put(self, stage: str, key: str, value: Any) -> None:
        """Remember `value` (JSON data); it reaches the disk with `save`."""
        name = f"{stage}-{key}{_SUFFIX}"
        self._used[name] = value
        self._fresh.add(name)

    def memo(self, stage: str) -> Memo:
        """The previous run's per-item results of `stage` (empty when there are none)."""
        previous = self.get(stage, cache_key(stage, "memo"))
        return Memo(previous if isinstance(previous, dict) else {})

    def keep(self, stage: str, memo: Memo) -> None:
        """Store what this run computed or reused of `stage`, when it changed."""
        if memo.changed:
            self.put(stage, cache_key(stage, "memo"), memo.used)

    def names(self) -> frozenset[str]:
        """The entries this run has used or computed so far (their file names)."""
        return frozenset(self._used)

    def entries_since(self, names: frozenset[str]) -> tuple[dict[str, Any], frozenset[str]]:
        """The entries used or computed since `names` (file name -> value), and which of them
        were computed: what a copy of this cache in a forked child hands back (`adopt`)."""
        new = {name: value for name, value in self._used.items() if name not in names}
        return new, frozenset(self._fresh & new.keys())

    def adopt(self, entries: tuple[dict[str, Any], frozenset[str]]) -> None:
        """Take what a copy of this cache used and computed in a forked child."""
        used, fresh = entries
        self._used.update(used)
        self._fresh.update(fresh)

    def save(self) -> None:
        """Write this run's entries and drop all but the `KEEP` most recent others of each
        stage this run used. Failures are ignored: a cache that cannot be written only makes
        the next run slower."""
        if self.folder is None or not self._used:
            return
        # Like generated files (write.py, G8), never written through a link: it could point
        # anywhere outside the output folder.
        if self.folder.is_symlink() or self.folder.parent.is_symlink():
            return
        with contextlib.suppress(OSError):
            self.folder.mkdir(parents=True, exist_ok=True)
            ignore = self.folder / ".gitignore"
            if not ignore.is_file():
                ignore.write_text("# mcpmint's stage cache: safe to delete\n*\n", encoding="utf-8")
            for name in sorted(self._used):
                if name in self._fresh:  # a corrupt entry of the same name is replaced
                    _write_atomic(self.folder / name, name, self._used[name])
                else:  # a hit: now the most recently used
                    os.utime(self.folder / name)
            stages = {name.rsplit("-", 1)[0] for name in self._used}
            others: dict[str, list[tuple[float, Path]]] = {}
            for entry in self.folder.glob(f"*{_SUFFIX}"):
                stage = entry.name.rsplit("-", 1)[0]
                if entry.name not in self._used and stage in stages:
                    others.setdefault(stage, []).append((entry.stat().st_mtime, entry))
            for entries in others.values():
                for _mtime, stale in sorted(entries, reverse=True)[KEEP:]:
                    stale.unlink(missing_ok=True)


def _write_atomic(target: Path, name: str, value: Any) -> None:
    key = name[: -len(_SUFFIX)].rsplit("-", 1)[-1]
    try:
        data = orjson.dumps({"key": key, "value": value})  # 3-4x faster than json
    except TypeError:  # what orjson refuses (a big integer, a non-string key): json decides
        data = json.dumps({"key": key, "value": value}, ensure_ascii=False).encode("utf-8")
    handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@dataclass
class Memo:
    """Per-item results of a stage (as JSON text) by a digest of each item's input, kept in
    the stage cache as one entry (`StageCache.memo`): the built tools (toolmemo.py), and the
    generated tests' cases of each tool (render/cases.py). `previous` is the last
    run's, `used` what this run computed or reused (the next run's `previous`), `missed` how
    many items this run had to compute."""

    previous: Mapping[str, Any]
    used: dict[str, Any] = field(default_factory=dict)
    missed: int = 0

    @property
    def changed(self) -> bool:
        """Whether the next run's memo differs from this run's `previous`."""
        return self.missed > 0 or self.used.keys() != self.previous.keys()
