"""Per-tool call metrics: OpenTelemetry instruments, and a summary kept in the process.

Every `tools/call` ends in exactly one outcome:

- `ok`: the upstream answered below 400;
- `upstream_error`: it answered 400 or more, could not be reached, or its token endpoint failed;
- `timeout`: it did not answer within the timeout;
- `argument_error`: the arguments broke the tool's schema (nothing sent);
- `unknown_tool`: no such tool, or one the operator's allowlists hide;
- `refused`: refused before sending, with a `reason` (scope, size, allowlisted values, rate...);
- `declined`: the user declined or cancelled the confirmation;
- `input_required`: a 2026-07-28 confirmation question went back to the client (the answer
  comes as a new call, counted on its own);
- `internal_error`: a bug in the server.

The instruments come from the global OpenTelemetry meter provider: with only
`opentelemetry-api` installed (the MCP SDK depends on it) they are no-ops; an operator who
installs the OpenTelemetry SDK and an exporter (for example by running the server under
`opentelemetry-instrument`) gets them exported. The summary (`<PREFIX>_METRICS_SUMMARY`) needs
nothing installed: JSON written when the server stops, and on `SIGUSR1`.
"""

from __future__ import annotations

import json
import signal
import sys
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from opentelemetry import metrics

__all__ = ["OUTCOMES", "Metrics", "classify", "load_metrics"]

OUTCOMES = (
    "ok",
    "upstream_error",
    "timeout",
    "argument_error",
    "unknown_tool",
    "refused",
    "declined",
    "input_required",
    "internal_error",
)
# Latencies kept per tool for the summary's percentiles: the most recent ones, bounded.
_WINDOW = 1024
# Distinct unknown tool names remembered: a model can invent names without end.
_MAX_UNKNOWN_NAMES = 100
_OTHER = "(other)"


def classify(decision: str, reason: str, status: int | None) -> str:
    """The outcome of a call from what its audit record says (`server._Outcome`)."""
    if decision == "input_required":
        return "input_required"
    if decision == "declined":
        return "declined"
    if decision == "refused":
        if reason == "unknown tool":
            return "unknown_tool"
        if reason == "invalid arguments":
            return "argument_error"
        if reason.startswith("internal error"):
            return "internal_error"
        return "refused"
    if reason == "upstream timeout":
        return "timeout"
    if reason in ("upstream failed", "credentials failed"):
        return "upstream_error"
    if status is not None and status >= 400:
        return "upstream_error"
    return "ok"


@dataclass
class _ToolStats:
    outcomes: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, int] = field(default_factory=dict)
    total_seconds: float = 0.0
    max_seconds: float = 0.0
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=_WINDOW))

    def add(self, outcome: str, reason: str, seconds: float) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        if reason:
            self.reasons[reason] = self.reasons.get(reason, 0) + 1
        self.total_seconds += seconds
        self.max_seconds = max(self.max_seconds, seconds)
        self.recent.append(seconds)

    def summary(self) -> dict[str, Any]:
        calls = sum(self.outcomes.values())
        ordered = sorted(self.recent)
        return {
            "calls": calls,
            "outcomes": dict(sorted(self.outcomes.items())),
            "reasons": dict(sorted(self.reasons.items())),
            "latencyMs": {
                "mean": _ms(self.total_seconds / calls) if calls else 0.0,
                "p50": _ms(_percentile(ordered, 0.50)),
                "p95": _ms(_percentile(ordered, 0.95)),
                "max": _ms(self.max_seconds),
            },
        }


class Metrics:
    """Counts and latencies of tool calls, per tool and outcome.

    Args:
        server: the server's name (the meter's name, and the summary's `server`).
        version: the server's version (the meter's version).
        destination: where `write_summary` goes: `off`, `stderr` or a file path (rewritten).
        meter_provider: OpenTelemetry's; the global one by default (tests pass their own).
    """

    def __init__(
        self,
        server: str,
        version: str = "",
        *,
        destination: str = "off",
        meter_provider: metrics.MeterProvider | None = None,
    ) -> None:
        provider = metrics.get_meter_provider() if meter_provider is None else meter_provider
        meter = provider.get_meter(server, version or None)
        self._calls = meter.create_counter(
            "mcpmint.tool.calls",
            unit="{call}",
            description="tools/call requests, by tool and outcome",
        )
        self._duration = meter.create_histogram(
            "mcpmint.tool.duration",
            unit="s",
            description="time from receiving a tools/call to answering it, by tool and outcome",
        )
        self.server = server
        self.destination = destination or "off"
        self._since = datetime.now(UTC)
        self._tools: dict[str, _ToolStats] = {}
        self._unknown: dict[str, int] = {}

    def record(
        self,
        tool: str | None,
        outcome: str,
        seconds: float,
        *,
        reason: str = "",
        status: int | None = None,
    ) -> None:
        """One finished call. `tool` is None for an unknown name (see `record_unknown`)."""
        attributes: dict[str, str | int] = {"mcpmint.outcome": outcome}
        if tool is not None:
            attributes["gen_ai.tool.name"] = tool
        # Reasons are a small fixed set of phrases chosen by the runtime, never request text.
        kept_reason = reason if outcome in ("refused", "declined", "upstream_error") else ""
        if kept_reason:
            attributes["mcpmint.reason"] = kept_reason
        if status is not None:
            attributes["http.response.status_code"] = status
        self._calls.add(1, attributes)
        self._duration.record(seconds, attributes)
        self._tools.setdefault(tool or "", _ToolStats()).add(outcome, kept_reason, seconds)

    def record_unknown(self, name: str, seconds: float) -> None:
        """A call to a tool that is not offered: counted without its name in OpenTelemetry
        (any text a client sends would make an unbounded attribute), by name in the summary."""
        self.record(None, "unknown_tool", seconds)
        key = name if name in self._unknown or len(self._unknown) < _MAX_UNKNOWN_NAMES else _OTHER
        self._unknown[key] = self._unknown.get(key, 0) + 1

    def summary(self) -> dict[str, Any]:
        """Everything counted since start, as JSON-ready data."""
        tools = {name: s.summary() for name, s in sorted(self._tools.items()) if name}
        totals: dict[str, int] = {}
        for stats in self._tools.values():
            for outcome, count in stats.outcomes.items():
                totals[outcome] = totals.get(outcome, 0) + count
        return {
            "server": self.server,
            "since": self._since.isoformat(timespec="seconds").replace("+00:00", "Z"),
            "until": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
            "calls": sum(totals.values()),
            "outcomes": dict(sorted(totals.items())),
            "tools": tools,
            "unknownTools": dict(sorted(self._unknown.items())),
        }

    def write_summary(self) -> None:
        """Write the summary where `destination` says; a failure is reported, never raised."""
        if self.destination == "off":
            return
        text = json.dumps(self.summary(), indent=2, sort_keys=False)
        try:
            if self.destination == "stderr":
                sys.stderr.write(f"metrics summary: {text}\n")
                sys.stderr.flush()
            else:
                with open(self.destination, "w", encoding="utf-8") as file:
                    file.write(text + "\n")
        except OSError as exc:
            sys.stderr.write(f"metrics summary: cannot write to {self.destination}: {exc}\n")

    def on_signal(self) -> None:
        """Write the summary on SIGUSR1 (`kill -USR1 <pid>`), where the platform has it."""
        if self.destination == "off" or not hasattr(signal, "SIGUSR1"):
            return

        def handler(signum: int, frame: Any) -> None:
            self.write_summary()

        signal.signal(signal.SIGUSR1, handler)


def load_metrics(server: str, version: str, prefix: str, environ: Mapping[str, str]) -> Metrics:
    """Metrics whose summary goes where `<prefix>_METRICS_SUMMARY` says (`off` by default)."""
    destination = environ.get(f"{prefix}_METRICS_SUMMARY", "").strip() or "off"
    return Metrics(server, version, destination=destination)


def _percentile(ordered: list[float], fraction: float) -> float:
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 2)
