"""Connecting to a Spark Connect server, and running its work cancellably with progress.

A Spark Connect URL is ``sc://HOST:PORT`` with optional ``/;key=value`` parameters (a
``token=…`` for an authenticated server, ``use_ssl=true``); it is checked and the host
probed before the client starts, so a wrong address fails at once with a message that
never repeats the token.

Every action runs in a helper thread under a tag of its own (Spark Connect's job tags:
the successor of the job group); the calling thread waits, calling the caller's progress
callback every ``interval`` seconds with the share of the cluster's tasks done. When the
callback raises (a cancelled Celery job), or `cancel` is called from anywhere, the tag
is interrupted on the server, the action ends, and the callback's exception is
re-raised in the caller's thread — where Django's database connection lives.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, TypeVar

from apps.engine.errors import EngineInputError
from apps.engine.rows.model import Progress

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T = TypeVar("T")

_REMOTE = re.compile(
    r"^sc://(?P<host>\[[0-9a-fA-F:]+\]|[A-Za-z0-9._-]+):(?P<port>\d{1,5})(?P<rest>/.*)?$"
)
TAG_PREFIX = "deidweb-"


def redacted(remote: str) -> str:
    """The URL without its parameters (a token must not reach a log or a message)."""
    return remote.split("/;", 1)[0].rstrip("/")


def check_remote(remote: str) -> tuple[str, int]:
    """Host and port of a Spark Connect URL, or a one-line EngineInputError."""
    found = _REMOTE.match(remote.strip())
    if not found:
        raise EngineInputError(
            f"bad Spark Connect address {redacted(remote)!r}: expected sc://HOST:PORT"
        )
    port = int(found["port"])
    if not 0 < port < 65536:
        raise EngineInputError(f"bad Spark Connect port {port} in {redacted(remote)!r}")
    return found["host"].strip("[]"), port


def connect(remote: str, *, timeout: float = 10.0) -> SparkSession:
    """A new Spark Connect session (not a shared one: each engine closes its own)."""
    host, port = check_remote(remote)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        raise EngineInputError(
            f"cannot reach the Spark Connect server at {redacted(remote)}: {exc.strerror or exc}"
        ) from None
    from pyspark.sql import SparkSession

    try:
        session: SparkSession = SparkSession.builder.remote(remote.strip()).create()
        session.version  # noqa: B018 - one round trip: fail here, not in the first pass
    except Exception as exc:  # the client raises many kinds; the message is what matters
        raise EngineInputError(
            f"the Spark Connect server at {redacted(remote)} refused the session: {first_line(exc)}"
        ) from None
    return session


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


class _Stages:
    """The latest task counts Spark reported for the running action (Spark 4's
    execution progress; a server that sends none leaves the share at 0)."""

    def __init__(self) -> None:
        self.done = 0
        self.total = 0

    def __call__(self, **report: Any) -> None:
        stages = list(report.get("stages") or [])
        self.total = sum(int(s.num_tasks) for s in stages)
        self.done = sum(int(s.num_completed_tasks) for s in stages)

    def share(self) -> float:
        return self.done / self.total if self.total else 0.0


class Runner:
    """Runs Spark actions of one session under tags, cancellably, reporting progress."""

    def __init__(self, session: SparkSession, *, interval: float = 1.0) -> None:
        self.session = session
        self.interval = interval
        self._lock = threading.Lock()
        self._running: set[str] = set()
        self._stages = _Stages()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="deidweb-spark")
        with contextlib.suppress(Exception):  # a server or client without progress reports
            session.registerProgressHandler(self._stages)

    def run(
        self,
        action: Callable[[], T],
        *,
        message: str,
        progress: Progress | None,
        start: float = 0.0,
        end: float = 1.0,
    ) -> T:
        """``action()`` on the cluster; progress reported as ``start``..``end``."""
        tag = f"{TAG_PREFIX}{uuid.uuid4().hex}"

        def tagged() -> T:
            self.session.addTag(tag)
            try:
                return action()
            finally:
                self.session.removeTag(tag)

        self._stages.done = self._stages.total = 0
        with self._lock:
            self._running.add(tag)
        try:
            return self._wait(self._pool.submit(tagged), tag, message, progress, start, end)
        except _Stopped as stopped:  # the caller's callback raised: its exception, as is
            raise stopped.error from None
        except EngineInputError:
            raise
        except Exception as exc:
            if _interrupted(exc):
                raise EngineInputError(f"{message}: interrupted (cancelled)") from None
            raise EngineInputError(f"{message} failed on the cluster: {first_line(exc)}") from exc
        finally:
            with self._lock:
                self._running.discard(tag)

    def _wait(
        self,
        future: Future[T],
        tag: str,
        message: str,
        progress: Progress | None,
        start: float,
        end: float,
    ) -> T:
        share = start
        while True:
            if progress is not None:
                try:
                    progress(share, message)
                except BaseException as error:
                    self._interrupt(tag)
                    # the interrupted action's own error: the caller's wins
                    with contextlib.suppress(BaseException):
                        future.result()
                    raise _Stopped(error) from None
            try:
                return future.result(timeout=self.interval)
            except FutureTimeout:
                share = start + (end - start) * self._stages.share()

    def _interrupt(self, tag: str) -> None:
        with contextlib.suppress(Exception):  # the session may be gone: nothing to stop
            self.session.interruptTag(tag)

    def cancel(self) -> None:
        """Interrupt every action this runner has started (callable from any thread)."""
        with self._lock:
            tags = list(self._running)
        for tag in tags:
            self._interrupt(tag)

    def close(self) -> None:
        self.cancel()
        self._pool.shutdown(wait=True)


class _Stopped(Exception):
    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _interrupted(exc: BaseException) -> bool:
    text = str(exc)
    return "OPERATION_CANCELED" in text or "interrupted" in text.lower() or "cancel" in text.lower()
