"""Diagnostics: errors and warnings as values, each with a location and a hint.

Every stage reports problems by adding a `Diagnostic` to a `DiagnosticSink` instead of raising.
The pipeline stops after the first stage whose sink holds an error; the CLI prints the
diagnostics and exits 2. A traceback never reaches a user for bad input.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum


class Level(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem found in the input.

    `location` is `file:line:col` where the line is known, otherwise `file#/json/pointer`.
    """

    level: Level
    location: str
    message: str
    hint: str = ""

    def render(self) -> str:
        text = f"{self.location}: {self.level.value}: {self.message}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text


@dataclass
class DiagnosticSink:
    """Collects diagnostics in the order they were found."""

    items: list[Diagnostic] = field(default_factory=list)

    def error(self, location: str, message: str, hint: str = "") -> None:
        self.items.append(Diagnostic(Level.ERROR, location, message, hint))

    def warning(self, location: str, message: str, hint: str = "") -> None:
        self.items.append(Diagnostic(Level.WARNING, location, message, hint))

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.items.extend(diagnostics)

    @property
    def has_errors(self) -> bool:
        return any(d.level is Level.ERROR for d in self.items)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.level is Level.ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.items if d.level is Level.WARNING]

    def __iter__(self) -> Iterator[Diagnostic]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


class Aborted(Exception):
    """Raised by the pipeline (never by a stage) when a stage reported errors.

    Carries the sink so callers can print every diagnostic, not just the first.
    """

    def __init__(self, sink: DiagnosticSink) -> None:
        super().__init__("; ".join(d.render() for d in sink.errors))
        self.sink = sink
