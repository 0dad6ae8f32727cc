"""Spark Connect servers for the tests: Sail in this process, Apache Spark as a child.

Neither is skipped quietly in CI: under DEIDWEB_REQUIRE_SERVICES a server that cannot
start fails the tests that need it (`unavailable`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from apps.engine.rows.spark.local import LocalSpark


def unavailable(message: str) -> None:
    if os.environ.get("DEIDWEB_REQUIRE_SERVICES"):
        pytest.fail(message)  # CI never narrows the run silently
    pytest.skip(message)


@contextlib.contextmanager
def sail_server() -> Iterator[str]:
    """Sail's Spark Connect server (Rust, no JVM) in this process: its ``sc://`` URL."""
    try:
        from pysail.spark import SparkConnectServer
    except ImportError as exc:
        unavailable(f"pysail (Sail, a dev dependency) is not installed: {exc}")
    try:
        server = SparkConnectServer("127.0.0.1", 0)
        server.start(background=True)
        _, port = server.listening_address
    except Exception as exc:  # noqa: BLE001 - any failure to start is the message
        unavailable(f"the Sail Spark Connect server did not start: {exc}")
    try:
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.stop()


@contextlib.contextmanager
def apache_spark_server() -> Iterator[LocalSpark]:
    """Apache Spark in local mode (two cores) running its Spark Connect server: its
    ``sc://`` URL, its process (the JVM; its Python workers in its process group) and log."""
    from apps.engine.errors import EngineError
    from apps.engine.rows.spark.local import local_spark_server

    try:
        server = local_spark_server()
        started = server.__enter__()
    except EngineError as exc:
        unavailable(str(exc))
    try:
        yield started
    finally:
        server.__exit__(None, None, None)
