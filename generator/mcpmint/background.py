"""The second core: pure stages computed in a forked second process while this one goes on.

Validation and the typed models are the two stages that take seconds on a large spec and whose
results nothing else needs until late, so they run beside the others (issue #8). A run has at
most one second process (`second_process`), forked at its first task and kept to the end:

- the first task is a closure over data this process already holds: fork() hands it to the
  child for free (no pickling of a 13 MB document); only its result comes back, by pipe;
- later tasks queue behind it in order and are picklable (a module-level function and its
  arguments): a warm-up while the child would otherwise wait, then the typed models' groups;
- a batch of jobs (`Shared`) is claimed one job at a time, by the child from the front and by
  this process from the back once it is free, through two shared counters: the two meet in
  the middle, and neither waits for work the other has not started.

Forking is only safe while no other thread runs (a lock held by another thread at fork time
stays held in the child forever), so the process is forked only then; otherwise, and whenever
the worker fails, the work is done here: a background task may only ever save time.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from multiprocessing.connection import Connection
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_END = -1  # the index of a batch's last message: the child claims no more of its jobs
_LOCK_TIMEOUT = 60.0  # seconds; a claim holds the lock for microseconds


class SecondProcess:
    """One forked worker process; its tasks run there one after the other.

    Every reply comes back tagged with its task's ticket (and a batch job's index), in the
    order the child made them; replies read while waiting for another are kept until asked.
    """

    def __init__(self) -> None:
        self._conn: Connection | None = None
        self._child: Any = None  # multiprocessing's forked Process
        self._claims: Any = None  # shared [next from the front, end] of the current batch
        self._tickets = 0
        self._replies: dict[tuple[int, int], tuple[bool, Any]] = {}
        self._open: set[int] = set()  # tickets whose last reply has not come yet
        self._batches: set[int] = set()
        # A thread reads every reply as it comes: a child whose replies went unread would
        # block on a full pipe (64 KB) while this process is busy.
        self._arrived = threading.Condition()
        self._reader: threading.Thread | None = None

    @property
    def started(self) -> bool:
        return self._child is not None

    def fork(self, task: Callable[[], Any]) -> int | None:
        """Fork the process with `task` (any callable: the child inherits it) as its first
        task; its ticket, or None when the process runs already or cannot be forked safely."""
        if self._child is not None or not can_fork():
            return None
        context = multiprocessing.get_context("fork")
        ours, theirs = context.Pipe()
        claims = context.Array("q", 2)
        ticket = self._expect()
        # A forked child inherits the Process object, arguments included: nothing is pickled.
        child = context.Process(target=_serve, args=(theirs, claims, ticket, task), daemon=True)
        try:
            child.start()
        except OSError:
            self._open.discard(ticket)
            return None
        finally:
            theirs.close()  # only the child writes there: its exit then reads as EOF here
        self._conn, self._child, self._claims = ours, child, claims
        self._reader = threading.Thread(target=self._read_all, name="mcpmint-replies", daemon=True)
        self._reader.start()
        return ticket

    def submit(self, function: Callable[..., Any], *arguments: Any) -> int | None:
        """Queue `function(*arguments)` (both picklable) behind the tasks before it; its
        ticket, or None when the process is not running."""
        return self._send("call", function, arguments)

    def batch(self, function: Callable[..., Any], jobs: Sequence[tuple[Any, ...]]) -> int | None:
        """Queue the jobs `function(*job)` as one batch, claimed by the child from the front
        (see `claim_last`); its ticket, or None when the process is not running or another
        batch is still open (one at a time: its replies must be collected first)."""
        if self._claims is None or self._batches & self._open:
            return None
        if not self._claims.get_lock().acquire(timeout=_LOCK_TIMEOUT):
            return None
        try:
            self._claims[0], self._claims[1] = 0, len(jobs)  # the child has no batch open
        finally:
            self._claims.get_lock().release()
        return self._send("batch", function, list(jobs))

    def claim_last(self, helps: Callable[[range], bool] | None = None) -> int | None:
        """The index of the last job of the open batch that nobody has claimed, now claimed
        by this process; None when every job is claimed, or when `helps` says, of the jobs
        nobody has claimed (their indexes), that this process had better leave them."""
        if self._claims is None or not self._claims.get_lock().acquire(timeout=_LOCK_TIMEOUT):
            return None
        try:
            front, end = self._claims[0], self._claims[1]
            if end <= front or (helps is not None and not helps(range(front, end))):
                return None
            self._claims[1] = end - 1
            return int(end - 1)
        finally:
            self._claims.get_lock().release()

    def reply(self, ticket: int, index: int = 0) -> tuple[bool, Any]:
        """(True, value) of a task (or of job `index` of a batch), waiting for it; (False,
        reason) when it failed or the process died first."""
        with self._arrived:
            self._arrived.wait_for(
                lambda: (ticket, index) in self._replies or ticket not in self._open
            )
            return self._replies.pop((ticket, index), (False, "the second process ended"))

    def batch_replies(self, ticket: int) -> dict[int, Any]:
        """Every job the child did in batch `ticket`, by index, once it claims no more (a job
        it failed, or did not finish because it died, is missing)."""
        self.reply(ticket, _END)
        found = {}
        with self._arrived:
            for ticket_index in [key for key in self._replies if key[0] == ticket]:
                ok, value = self._replies.pop(ticket_index)
                if ok:
                    found[ticket_index[1]] = value
        return found

    def close(self, *, wait: bool = True) -> None:
        """Stop the process: at once when it still has work (nothing waits for it any more).
        Without `wait`, for a caller whose own process ends right after: the process is told
        to stop (or stopped) and left to end alone, with the reply reader (the end of a
        process that holds a parsed 13 MB spec took 0.01 s to wait for)."""
        if self._child is None:
            return
        assert self._conn is not None
        if self._open:
            self._child.terminate()
        else:
            with suppress(OSError):
                self._conn.send(None)
        if not wait:
            return
        self._child.join()
        if self._reader is not None:
            self._reader.join()  # it ends at the child's end of the pipe
        self._conn.close()
        self._reader = None
        self._conn, self._child, self._claims = None, None, None
        self._open.clear()
        self._replies.clear()

    def _send(self, kind: str, function: Callable[..., Any], payload: Any) -> int | None:
        """Send one task, with its ticket (a message that cannot be sent takes none away)."""
        if self._conn is None:
            return None
        ticket = self._expect(batch=kind == "batch")  # before any reply can come
        try:
            self._conn.send((kind, ticket, function, payload))
        except (OSError, ValueError, TypeError, AttributeError):  # dead, or not picklable
            with self._arrived:
                self._open.discard(ticket)
            return None
        return ticket

    def _expect(self, *, batch: bool = False) -> int:
        with self._arrived:
            self._tickets += 1
            self._open.add(self._tickets)
            if batch:
                self._batches.add(self._tickets)
            return self._tickets

    def _read_all(self) -> None:
        """The reader thread: every reply into `_replies`, until the child's end closes."""
        conn = self._conn
        assert conn is not None
        while True:
            try:
                ticket, index, ok, value = conn.recv()
            except (EOFError, OSError):  # the child ended: nothing more will come
                with self._arrived:
                    self._open.clear()
                    self._arrived.notify_all()
                return
            with self._arrived:
                self._replies[(ticket, index)] = (ok, value)
                if ticket not in self._batches or index == _END:
                    self._open.discard(ticket)
                self._arrived.notify_all()


def _serve(conn: Connection, claims: Any, first: int, task: Callable[[], Any]) -> None:
    """The child: its inherited first task (ticket `first`), then each queued task or batch,
    until told to stop (None) or the parent is gone."""
    conn.send((first, 0, *_outcome(task, ())))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        kind, ticket, function, payload = message
        if kind == "call":
            conn.send((ticket, 0, *_outcome(function, payload)))
            continue
        while (index := _claim_next(claims)) is not None:
            conn.send((ticket, index, *_outcome(function, payload[index])))
        conn.send((ticket, _END, True, None))


def _claim_next(claims: Any) -> int | None:
    with claims.get_lock():
        front, end = claims[0], claims[1]
        if front >= end:
            return None
        claims[0] = front + 1
        return int(front)


def _outcome(function: Callable[..., Any], arguments: Sequence[Any]) -> tuple[bool, Any]:
    try:
        return True, function(*arguments)
    except Exception as exc:  # reported to the parent, which then computes it itself
        return False, f"{type(exc).__name__}: {exc}"


_RUN: list[SecondProcess] = []  # the innermost `second_process` block's process


@contextmanager
def second_process(*, wait: bool = True) -> Iterator[SecondProcess]:
    """One second process for the stages run inside the block (a pipeline run): forked by
    the first task that wants it, stopped when the block ends (and waited for, unless the
    caller's process ends right after: `SecondProcess.close`)."""
    process = SecondProcess()
    _RUN.append(process)
    try:
        yield process
    finally:
        _RUN.pop()
        process.close(wait=wait)


def current() -> SecondProcess | None:
    """The process of the enclosing `second_process` block, if any."""
    return _RUN[-1] if _RUN else None


def _run_or_own() -> tuple[SecondProcess, bool]:
    """The run's second process, or one of the caller's own (True: the caller closes it)."""
    process = current()
    return (process, False) if process is not None else (SecondProcess(), True)


class Background(Generic[T]):
    """`task()`, in the second process when `worth_it` and it can still be forked for it, else
    here on demand. Outside a `second_process` block the process is this task's own."""

    def __init__(self, task: Callable[[], T], *, worth_it: bool) -> None:
        self._task = task
        self._process: SecondProcess | None = None
        self._own = False
        self._ticket: int | None = None
        if worth_it:
            process, self._own = _run_or_own()
            self._ticket = process.fork(task)
            self._process = process if self._ticket is not None else None

    @property
    def forked(self) -> bool:
        return self._ticket is not None

    def cancel(self) -> None:
        """Give the task up: the process it was forked in is stopped, so that a later task
        can fork one (only for a task begun before anything else was queued there)."""
        process, self._process, self._ticket = self._process, None, None
        if process is not None:
            process.close()

    def result(self) -> T:
        """The task's value: from the worker, or computed here (no worker, or it failed)."""
        process, ticket = self._process, self._ticket
        self._process, self._ticket = None, None
        try:
            if process is not None and ticket is not None:
                ok, value = process.reply(ticket)
                if ok:
                    return value  # type: ignore[no-any-return]
            return self._task()
        finally:
            if process is not None and self._own:
                process.close()


class Shared(Generic[T]):
    """`function(*job)` for every job, split between the second process and this one.

    When `worth_it`, the jobs go to the second process (forked for them if it is not running
    yet) as one batch, which it works through from the front; `results` then claims, from the
    back, each job nobody has started, computes it here, and collects the others. `function`
    and the jobs must be picklable. The results are the same wherever a job ran.

    `helps(unclaimed)`, given the indexes of the jobs nobody has started, says whether this
    process should take one rather than wait for the second process to do them all (by
    default it always should): a function that must import much before its first job here
    may cost more than the jobs left. Once it says no, this process waits.
    """

    def __init__(
        self,
        function: Callable[..., T],
        jobs: Sequence[tuple[Any, ...]],
        *,
        worth_it: bool,
        helps: Callable[[range], bool] | None = None,
    ) -> None:
        self._function, self._jobs, self._helps = function, list(jobs), helps
        self._process: SecondProcess | None = None
        self._own = False
        self._ticket: int | None = None
        self.ran_here = [True] * len(self._jobs)  # where each job was computed, once known
        if worth_it and self._jobs:
            process, self._own = _run_or_own()
            if not process.started:
                process.fork(_nothing)
            self._ticket = process.batch(function, self._jobs)
            self._process = process

    def results(self) -> list[T]:
        """Every job's value, in the jobs' order."""
        process, ticket = self._process, self._ticket
        self._process, self._ticket = None, None
        values: dict[int, T] = {}
        try:
            if process is not None and ticket is not None:
                while (index := process.claim_last(self._helps)) is not None:
                    values[index] = self._function(*self._jobs[index])
                theirs = process.batch_replies(ticket)
                for index, value in theirs.items():
                    if index not in values:
                        values[index] = value
                        self.ran_here[index] = False
            for index, job in enumerate(self._jobs):  # no worker, or jobs it did not finish
                if index not in values:
                    values[index] = self._function(*job)
        finally:
            if process is not None and self._own:
                process.close()
        return [values[index] for index in range(len(self._jobs))]


def warm_up(function: Callable[[], Any]) -> None:
    """Queue `function` (picklable) on the running second process, if any, to prepare what
    later tasks need (imports, caches) while the worker would otherwise wait."""
    process = current()
    if process is not None:
        process.submit(function)


def can_fork() -> bool:
    """A second core, fork() available, and no other thread: a run never has two second
    processes (a forked one's first task is inherited, so only the first fork can carry one)."""
    return (
        (os.cpu_count() or 1) >= 2
        and threading.active_count() == 1
        and "fork" in multiprocessing.get_all_start_methods()
    )


def _nothing() -> None:
    """The first task of a process forked only to take queued jobs."""
