"""The second core (background.py): forked only when safe, and never a different answer."""

from __future__ import annotations

import os
import threading

import pytest

from mcpmint import background, models
from mcpmint.background import Background, can_fork
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import build

from .conftest import SPECS


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


@pytest.mark.usefixtures("fork_allowed")
def test_models_made_in_a_second_process_are_the_same_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sink = DiagnosticSink()
    server = build(SPECS / "petstore-plus.yaml", sink)
    inline = models.models_source(server, sink)
    forked: list[bool] = []
    original = Background.__init__

    def spy(self: Background[object], task: object, *, worth_it: bool) -> None:
        original(self, task, worth_it=worth_it)  # type: ignore[arg-type]
        forked.append(self.forked)

    monkeypatch.setattr(models, "BACKGROUND_MIN_TOOLS", 1)
    monkeypatch.setattr(Background, "__init__", spy)

    assert models.models_source(server, sink) == inline
    assert forked == [True]
    assert not sink.has_errors


@pytest.mark.usefixtures("fork_allowed")
def test_model_groups_split_between_the_two_processes_are_the_same_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sink = DiagnosticSink()
    server = build(SPECS / "petstore-plus.yaml", sink)
    monkeypatch.setattr(models, "GROUP_MIN_TOOLS", 1)
    monkeypatch.setattr(models, "GROUPS", 4)
    inline = models.models_source(server, sink)  # 8 tools, under BACKGROUND_MIN_TOOLS
    monkeypatch.setattr(models, "BACKGROUND_MIN_TOOLS", 1)
    monkeypatch.setattr(models, "_share", lambda texts: 1)  # one group there, the rest here
    pending = models.PendingModels(server, None)
    assert pending._background is not None and pending._background.forked
    assert len(pending._here) == len(pending.missing) - 1 > 0
    assert pending.join(sink) == inline
    assert not sink.has_errors


def test_the_second_process_gets_about_three_quarters_of_the_model_work() -> None:
    assert models._share(["x" * 10] * 8) == 6
    assert models._share(["x" * 90, "x" * 5, "x" * 5]) == 1
    assert models._share(["x"]) == 1
