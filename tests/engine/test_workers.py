"""The engine's threads (apps/engine/workers.py): work handed to them is done exactly once,
and the caller never waits for a thread that has not started it."""

from __future__ import annotations

import threading

from apps.engine.workers import Deferred, encoding_threads, share_work


def _occupy_every_thread() -> threading.Event:
    """Keep every thread of the pool busy until the returned event is set."""
    pool = encoding_threads()
    release = threading.Event()
    started = threading.Barrier(pool._max_workers + 1)

    def hold() -> None:
        started.wait()
        release.wait()

    for _ in range(pool._max_workers):
        pool.submit(hold)
    started.wait()
    return release


def test_share_work_runs_every_task_once() -> None:
    done: list[int] = []
    share_work(500, done.append)
    assert sorted(done) == list(range(500))


def test_share_work_does_not_wait_for_a_busy_pool() -> None:
    """Every thread busy: the caller does all the tasks itself and returns."""
    release = _occupy_every_thread()
    try:
        who: list[str] = []
        share_work(5, lambda _task: who.append(threading.current_thread().name))
        assert who == [threading.current_thread().name] * 5
    finally:
        release.set()


def test_deferred_runs_in_the_caller_when_no_thread_started_it() -> None:
    release = _occupy_every_thread()
    try:
        deferred = Deferred(lambda a, b: (a + b, threading.current_thread().name), 2, 3)
        assert deferred.result() == (5, threading.current_thread().name)
    finally:
        release.set()


def test_deferred_takes_the_threads_result() -> None:
    ran = threading.Event()

    def work() -> int:
        ran.set()
        return 42

    deferred = Deferred(work)
    ran.wait(5)
    assert deferred.result() == 42
