"""The second core: a pure stage computed in a forked process while this one goes on.

Validation and the typed models are the two stages that take seconds on a large spec and whose
results nothing else needs until late, so each may run beside the others (issue #8). A task is
a closure over data this process already holds; fork() hands it to the child for free (no
pickling of a 13 MB document), and only its result comes back through a pipe.

Forking is only safe while no other thread runs (a lock held by another thread at fork time
stays held in the child forever), so a task is forked only then; otherwise, and whenever the
worker fails, `result()` computes it here: a background task may only ever save time.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, ClassVar, Generic, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """`task()`, in a forked second process when `worth_it` and safe, else here on demand."""

    _inherited: ClassVar[Callable[[], Any] | None] = None  # the task a forked child runs

    def __init__(self, task: Callable[[], T], *, worth_it: bool) -> None:
        self._task = task
        self._pool: ProcessPoolExecutor | None = None
        self._future: Future[T] | None = None
        if worth_it and can_fork():
            Background._inherited = task
            try:
                self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
                self._future = self._pool.submit(_run_inherited)  # the fork happens here
            except (OSError, RuntimeError):
                self._close()
            finally:
                Background._inherited = None

    @property
    def forked(self) -> bool:
        return self._future is not None

    def result(self) -> T:
        """The task's value: from the worker, or computed here (no worker, or it failed)."""
        if self._future is not None:
            try:
                value = self._future.result()
            except Exception:  # a worker that died or could not send its result back
                self._close()
            else:
                self._close()
                return value
        return self._task()

    def _close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self._pool, self._future = None, None


def can_fork() -> bool:
    """A second core, fork() available, and no other thread (also none of a running task's:
    a pool's manager thread counts, so two tasks never overlap each other)."""
    return (
        (os.cpu_count() or 1) >= 2
        and threading.active_count() == 1
        and "fork" in multiprocessing.get_all_start_methods()
    )


def _run_inherited() -> Any:
    task = Background._inherited
    assert task is not None  # set by the parent just before the fork
    return task()
