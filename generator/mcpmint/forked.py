"""One pure computation in a forked child process, while this process goes on.

A run on a large spec has parts that nothing next to them waits for: the validation
findings (warnings only, reported when the run ends: `validate.Findings`), and, once the
tools are built, the typed models and the generated tests' cases (`beside`), made while
this process renders and locks the rest. A fork hands the child what this process already
holds: nothing is pickled on the way there, only the result on the way back.

No child outlives its run: `cancel` kills it, it is a daemon (multiprocessing terminates
daemons at a normal exit, Ctrl-C included), and it watches its parent and exits as soon as
the parent is gone (a parent killed by SIGKILL or SIGTERM runs no clean-up at all).

Forking is only safe while no other thread runs (a lock held by another thread at fork time
stays held in the child forever), and not every platform can fork: then, and whenever the
child fails, the computation runs here, in `result`.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from mcpmint.diagnostics import Diagnostic, DiagnosticSink

if TYPE_CHECKING:
    from mcpmint.write.cache import StageCache

T = TypeVar("T")

# From this many tools on, the typed models and the test cases are each made in a forked
# child (`beside`); below, a fork costs more than it saves.
FORK_MIN_TOOLS = 200

_PARENT_POLL = 0.2  # seconds between the child's checks that its parent is alive


class Forked(Generic[T]):
    """`task()` computed in a forked child when that is possible, here otherwise."""

    def __init__(self, task: Callable[[], T]) -> None:
        self._task: Callable[[], T] | None = task
        self._conn: Connection | None = None
        self._child: Any = None  # multiprocessing's Process
        if not can_fork():
            return
        context = multiprocessing.get_context("fork")
        ours, theirs = context.Pipe(duplex=False)
        child = context.Process(target=_child_main, args=(task, theirs, os.getpid()), daemon=True)
        try:
            child.start()
        except OSError:
            ours.close()
            return
        finally:
            theirs.close()  # the child's end: its exit then reads as EOF here
        self._conn, self._child = ours, child

    def result(self) -> T:
        """The task's value, waiting for the child; computed here if the child failed."""
        task, self._task = self._task, None
        if task is None:
            raise RuntimeError("the result was taken or cancelled already")
        if self._conn is not None:
            try:
                succeeded, value = self._conn.recv()
            except (EOFError, OSError):
                succeeded, value = False, None
            finally:
                self._stop()
            if succeeded:
                return value  # type: ignore[no-any-return]
        return task()

    def cancel(self) -> None:
        """Stop the child, if any; its result is never asked for."""
        self._task = None
        self._stop()

    def _stop(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child.join()
            self._child = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class Beside(Generic[T]):
    """A pure stage begun by `beside`: `result` waits for its value and diagnostics, `cancel`
    drops it (a run that failed meanwhile does not wait for, or compute, what it will not
    use)."""

    def __init__(
        self, stage: Callable[[DiagnosticSink], T], cache: StageCache | None, *, fork: bool
    ) -> None:
        self._stage: Callable[[DiagnosticSink], T] | None = stage
        self._cache = cache
        self._pending: Forked[tuple[T, list[Diagnostic], Any]] | None = None
        if fork:
            before = cache.names() if cache is not None else frozenset()

            def made() -> tuple[T, list[Diagnostic], tuple[dict[str, Any], frozenset[str]]]:
                found = DiagnosticSink()
                value = stage(found)
                entries = cache.entries_since(before) if cache is not None else ({}, frozenset())
                return value, found.items, entries

            self._pending = Forked(made)

    def result(self) -> tuple[T, list[Diagnostic]]:
        """The stage's value and its diagnostics; this process's cache takes the entries the
        child used and made (as if the stage had run here)."""
        stage, self._stage = self._stage, None
        if stage is None:
            raise RuntimeError("the result was taken or cancelled already")
        if self._pending is None:
            found = DiagnosticSink()
            return stage(found), found.items
        value, diagnostics, entries = self._pending.result()
        if self._cache is not None:
            self._cache.adopt(entries)
        return value, diagnostics

    def cancel(self) -> None:
        """Stop the stage (kill its child, if any); its result is never asked for."""
        self._stage = None
        if self._pending is not None:
            self._pending.cancel()


def beside(
    stage: Callable[[DiagnosticSink], T], cache: StageCache | None, *, fork: bool
) -> Beside[T]:
    """A pure `stage` (it reports into the sink it is given, and may use `cache`), begun: in
    a forked child when `fork`, else when its result is asked for (`Beside`)."""
    return Beside(stage, cache, fork=fork)


def can_fork() -> bool:
    """Whether forking is possible and safe now: a platform with fork, and no other thread."""
    return sys.platform != "win32" and threading.active_count() == 1


def _child_main(task: Callable[[], Any], conn: Connection, parent: int) -> None:
    watchdog = threading.Thread(target=_exit_without, args=(parent,), daemon=True)
    watchdog.start()
    try:
        outcome: tuple[bool, Any] = (True, task())
    except BaseException:  # the parent computes it again and reports what goes wrong
        outcome = (False, None)
    try:
        conn.send(outcome)
    except Exception:  # a value that cannot be pickled: the parent computes it
        conn.send((False, None))
    conn.close()


def _exit_without(parent: int) -> None:
    """End this process as soon as its parent is gone (it is then re-parented)."""
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL)
    os._exit(1)
