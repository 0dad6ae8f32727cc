"""Spark Connect servers for the tests, each a child process working in a temporary folder
(where their managed tables go): Sail, and Apache Spark in local mode.

Neither is skipped quietly in CI: under DEIDWEB_REQUIRE_SERVICES a server that cannot
start fails the tests that need it (`unavailable`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
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
    """Sail's Spark Connect server (Rust, no JVM) as a child process working in a folder
    of its own, removed afterwards: its ``sc://`` URL. Sail puts a managed table (``CREATE
    TABLE``, ``saveAsTable``) under ``spark-warehouse`` of its working directory, resolved
    when the table is written; run in this process, that was the checkout's root."""
    if importlib.util.find_spec("pysail") is None:
        unavailable("pysail (Sail, a dev dependency) is not installed")
    from apps.engine.rows.spark.local import free_port, stop_server, wait_for_port

    folder = Path(tempfile.mkdtemp(prefix="deidweb-sail-"))
    port = free_port()
    log_path = folder / "sail.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "pysail", "spark", "server", "--port", str(port)],
            cwd=folder,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        if not wait_for_port(port, 120.0, process):
            tail = log_path.read_text(errors="replace")[-2000:]
            unavailable(f"the Sail Spark Connect server did not start:\n{tail}")
        yield f"sc://127.0.0.1:{port}"
    finally:
        stop_server(process)
        shutil.rmtree(folder, ignore_errors=True)


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
