"""The few threads the engine's compiled passes run on side by side (they let go of the
interpreter), and two ways of handing them work that never leave the caller waiting for a
thread that has not started (:class:`Deferred`, :func:`share_work`).

On a machine whose cores are all busy, a thread handed work may wait for a core longer
than the work takes; the caller then does the work itself instead of waiting. On a quiet
machine the threads run it meanwhile, as before.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

_POOL: list[ThreadPoolExecutor] = []


def encoding_threads() -> ThreadPoolExecutor:
    """Threads for coding columns side by side (as many as cores, up to 4), made once per
    process (a forked process makes its own: it has none of the threads of its parent's)."""
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)))
    return _POOL[0]


os.register_at_fork(after_in_child=_POOL.clear)


def start_encoding_threads(run: Callable[[], object] | None = None, timeout: float = 60.0) -> int:
    """Start every thread of :func:`encoding_threads` now (a process's loading, before
    any search is timed): the pool starts a thread only when none is idle, so quick work
    handed to it may leave one to start in a user's first search. Each thread waits for
    the others here, so all have started on return, then runs ``run`` (each thread
    once: the load's warm-up); their number."""
    pool = encoding_threads()
    workers = pool._max_workers
    meet = threading.Barrier(workers + 1, timeout=timeout)

    def started() -> None:
        meet.wait()
        if run is not None:
            run()

    waits = [pool.submit(started) for _ in range(workers)]
    meet.wait()
    for wait in waits:
        wait.result()
    return workers


_T = TypeVar("_T")


class Deferred(Generic[_T]):
    """``fn(*args)`` handed to :func:`encoding_threads`, its result taken by
    :meth:`result`, which runs it in the calling thread itself when no thread has
    started it yet (on a busy machine a thread may wait for a core longer than the work
    takes: the caller then never waits for it; on a quiet one the work ran meanwhile)."""

    __slots__ = ("_fn", "_args", "_future")

    def __init__(self, fn: Callable[..., _T], *args: Any) -> None:
        self._fn, self._args = fn, args
        self._future: Future[_T] = encoding_threads().submit(fn, *args)

    def result(self) -> _T:
        if self._future.cancel():  # (not started: this thread does it)
            return self._fn(*self._args)
        return self._future.result()


def share_work(tasks: int, run: Callable[[int], None]) -> None:
    """``run(0) .. run(tasks - 1)`` (independent of each other), by the calling thread and
    one of :func:`encoding_threads` together, each taking the next task when done with
    one: when the thread does not get a core soon, the caller does them all, without
    waiting for it (measured on adult's 9 columns under load 6 on 2 cores: median 2.5 ms
    against 7.2 ms for one task per column in the threads, 2.3 ms for one thread)."""
    order = iter(range(tasks))  # (taking the next item is atomic: each task runs once)

    def work() -> None:
        for task in order:
            run(task)

    helper = encoding_threads().submit(work) if tasks > 1 else None
    work()
    if helper is not None and not helper.cancel():
        helper.result()


__all__ = ["Deferred", "encoding_threads", "share_work", "start_encoding_threads"]
