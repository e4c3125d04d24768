"""The second core (background.py): forked only when safe, and never a different answer."""

from __future__ import annotations

import functools
import os
import threading
import time
from typing import Any

import pytest

from mcpmint import background
from mcpmint.background import Background, Shared, can_fork


@pytest.fixture
def fork_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two cores and no other thread, whatever earlier tests left running: the tests below
    are about what happens once a task is forked."""
    monkeypatch.setattr(background.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(background.threading, "active_count", lambda: 1)
    assert can_fork()


@pytest.mark.usefixtures("fork_allowed")
def test_a_worthwhile_task_runs_in_another_process() -> None:
    here = os.getpid()

    assert Background(os.getpid, worth_it=True).result() != here
    assert Background(os.getpid, worth_it=False).result() == here


@pytest.mark.usefixtures("fork_allowed")
def test_a_worker_that_dies_is_replaced_by_computing_here() -> None:
    parent = os.getpid()

    def task() -> int:
        if os.getpid() != parent:
            os._exit(3)  # the worker dies without an answer
        return 42

    pending = Background(task, worth_it=True)

    assert pending.forked
    assert pending.result() == 42


def test_no_fork_while_another_thread_runs() -> None:
    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    try:
        pending = Background(os.getpid, worth_it=True)
        assert not pending.forked
        assert pending.result() == os.getpid()
    finally:
        release.set()
        thread.join()


def test_no_fork_on_one_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background.os, "cpu_count", lambda: 1)

    assert not Background(os.getpid, worth_it=True).forked


def _wait_until_running(shared: Shared[Any]) -> None:
    """Until the worker has claimed the first job (else this process would take them all)."""
    process = shared._process
    assert process is not None and process._claims is not None
    deadline = time.monotonic() + 60
    while process._claims[0] < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process._claims[0] >= 1


def _pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


@pytest.mark.usefixtures("fork_allowed")
def test_shared_jobs_are_taken_from_both_ends() -> None:
    here = os.getpid()
    with background.second_process():
        shared = Shared(_pid_after, [(1.0,), (0.0,), (0.0,), (0.0,), (0.0,)], worth_it=True)
        _wait_until_running(shared)
        pids = shared.results()
    # The worker holds the first (slow) job; this process takes the rest, from the last.
    assert pids[0] != here and pids[1:] == [here] * 4
    assert [pid == here for pid in pids] == shared.ran_here
    assert [pid == here for pid in pids] == shared.ran_here


@pytest.mark.usefixtures("fork_allowed")
def test_shared_jobs_are_left_to_the_worker_while_helping_would_not_pay() -> None:
    """`helps` sees the jobs nobody has started when this process is free to take one: when
    it says no (here: more than two are left), this process waits for the worker's."""
    here = os.getpid()
    seen: list[range] = []

    def helps(unclaimed: range) -> bool:
        seen.append(unclaimed)
        return len(unclaimed) <= 2

    with background.second_process():
        jobs = [(0.5,), (0.0,), (0.0,), (0.0,), (0.0,)]
        shared = Shared(_pid_after, jobs, worth_it=True, helps=helps)
        _wait_until_running(shared)
        pids = shared.results()
    assert seen[0] == range(1, 5)  # the worker holds the first job, which takes a while
    # Four left: this process waits for the worker, which takes every job in turn.
    assert here not in pids and shared.ran_here == [False] * 5
    refused = [(0.5,), (0.0,), (0.0,)]
    with background.second_process():
        shared = Shared(_pid_after, refused, worth_it=True, helps=helps)
        _wait_until_running(shared)
        pids = shared.results()
    assert pids[0] != here and pids[1:] == [here, here]  # two left: taken here


@pytest.mark.usefixtures("fork_allowed")
def test_shared_jobs_of_a_dead_worker_are_done_here() -> None:
    parent = os.getpid()
    with background.second_process() as process:
        process.fork(functools.partial(os._exit, 3))  # the worker dies at once
        shared = Shared(_pid_after, [(0.0,), (0.0,)], worth_it=True)
        assert shared.results() == [parent, parent]


@pytest.mark.usefixtures("fork_allowed")
def test_one_second_process_per_run() -> None:
    with background.second_process() as process:
        assert Background(os.getpid, worth_it=True).forked
        assert process.started
        later = Background(os.getpid, worth_it=True)  # the process is taken: done here
        assert not later.forked and later.result() == os.getpid()


@pytest.mark.usefixtures("fork_allowed")
def test_a_task_that_cannot_be_sent_leaves_the_next_ones_their_replies() -> None:
    with background.second_process() as process:
        process.fork(background._nothing)
        assert process.submit(lambda: 1) is None  # a lambda cannot be pickled: not sent
        ticket = process.submit(os.getpid)
        assert ticket is not None
        deadline = time.monotonic() + 60
        while (ticket, 0) not in process._replies and time.monotonic() < deadline:
            time.sleep(0.01)
        assert (ticket, 0) in process._replies  # tagged with its own ticket, not another's
        ok, pid = process.reply(ticket)
        assert ok and pid != os.getpid()


@pytest.mark.usefixtures("fork_allowed")
def test_a_process_left_without_waiting_ends_alone_and_a_cancelled_task_stops_it() -> None:
    # close(wait=False): the caller's process ends right after (the command line), so it
    # does not wait for the second one to end; that one ends on its own all the same.
    with background.second_process(wait=False) as process:
        assert Background(os.getpid, worth_it=True).result() != os.getpid()
        child = process._child
    assert child is not None
    child.join(timeout=30)
    assert child.exitcode == 0
    # A task given up (Background.cancel) stops its process, which a later task can fork.
    with background.second_process() as process:
        given_up = Background(functools.partial(time.sleep, 30), worth_it=True)
        assert given_up.forked
        started = time.monotonic()
        given_up.cancel()
        assert time.monotonic() - started < 10 and not process.started
        assert Background(os.getpid, worth_it=True).forked
