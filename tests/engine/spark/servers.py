"""Spark Connect servers for the tests: Sail in this process, Apache Spark as a child.

Neither is skipped quietly in CI: under DEIDWEB_REQUIRE_SERVICES a server that cannot
start fails the tests that need it (`unavailable`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SPARK_CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def unavailable(message: str) -> None:
    if os.environ.get("DEIDWEB_REQUIRE_SERVICES"):
        pytest.fail(message)  # CI never narrows the run silently
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, timeout: float, process: subprocess.Popen[bytes] | None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            return False
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return True
        time.sleep(0.5)
    return False


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


def spark_home() -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    home = Path(pyspark.__file__).parent
    return home if (home / "bin" / "spark-submit").exists() else None


@contextlib.contextmanager
def apache_spark_server(timeout: float = 180.0) -> Iterator[str]:
    """Apache Spark in local mode (two cores) running its Spark Connect server, started
    from the pyspark wheel's own jars with this machine's Java 17."""
    home = spark_home()
    if home is None:
        unavailable("pyspark (Apache Spark's jars, a dev dependency) is not installed")
    if shutil.which("java") is None:
        unavailable("Java is not installed (Debian: openjdk-17-jre-headless)")
    assert home is not None
    port = free_port()
    scratch = Path(tempfile.mkdtemp(prefix="deidweb-spark-"))
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(scratch),
    }
    command = [
        str(home / "bin" / "spark-submit"),
        "--class",
        SPARK_CONNECT_CLASS,
        "--master",
        "local[2]",
        "--driver-memory",
        "1g",
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.sql.shuffle.partitions=4",
        "--conf",
        f"spark.sql.warehouse.dir={scratch / 'warehouse'}",
        "--conf",
        f"spark.driver.extraJavaOptions=-Dderby.system.home={scratch}",
    ]
    log = (scratch / "spark.log").open("wb")
    process = subprocess.Popen(
        command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=scratch, start_new_session=True
    )
    try:
        if not wait_for_port(port, timeout, process):
            tail = (scratch / "spark.log").read_text(errors="replace")[-2000:]
            unavailable(f"Apache Spark's Spark Connect server did not start:\n{tail}")
        yield f"sc://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        log.close()
        shutil.rmtree(scratch, ignore_errors=True)
