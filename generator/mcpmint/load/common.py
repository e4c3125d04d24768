"""What the load stage's readers share (load.py for JSON, yamlload.py for YAML): the limits
on what one load may read, where each value came from, and the problem that stops a file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "DEPTH_HINT",
    "NODES_HINT",
    "FileSource",
    "Limits",
    "Refused",
    "depth_message",
    "nodes_message",
]


@dataclass(frozen=True)
class Limits:
    """Bounds on what one load may read and build, so hostile input fails fast and clearly."""

    max_bytes: int = 25 * 1024 * 1024  # per file and in total
    # YAML alias nodes per file. Real specs use hundreds (one of the sweep's, 732); an alias
    # bomb is stopped by `max_nodes`, which counts every alias expanded.
    max_aliases: int = 100_000
    max_depth: int = 256  # nesting of mappings/sequences
    max_nodes: int = 5_000_000  # constructed values, counting alias expansions


@dataclass(frozen=True)
class FileSource:
    """Where the values of one file came from, in that file's own pointer space."""

    display: str
    # Escaped pointer ("" or "/a/b") -> line << 32 | column, both 1-based; None for JSON,
    # whose locations are the pointers themselves.
    positions: Mapping[str, int] | None

    def locate(self, pointer: str) -> str:
        if self.positions is None:
            return f"{self.display}#{pointer}" if pointer else self.display
        while True:
            packed = self.positions.get(pointer)
            if packed is not None:
                return f"{self.display}:{packed >> 32}:{packed & 0xFFFFFFFF}"
            if not pointer:
                return self.display
            pointer = pointer.rsplit("/", 1)[0]


class Refused(Exception):
    """One located problem that stops reading the current file."""

    def __init__(self, location: str, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.location = location
        self.message = message
        self.hint = hint


DEPTH_HINT = "flatten the structure with $ref to named components"


def depth_message(limits: Limits) -> str:
    return f"nested deeper than {limits.max_depth} levels (max_depth)"


NODES_HINT = "the document is too large to process safely"


def nodes_message(limits: Limits) -> str:
    return f"more than {limits.max_nodes} values, counting alias expansions (max_nodes)"
