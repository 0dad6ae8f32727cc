"""A Spark Connect server of Apache Spark on this machine (local mode), for the tests,
the benchmark and an operator trying the cluster path without a cluster.

It runs Spark's own server class from the jars inside the ``pyspark`` wheel (a dev
dependency) with this machine's Java 17; its Python workers are this interpreter with
nothing else on their path: the engine's code reaches them with the session, as it
reaches a real cluster's (`SparkRows._ship_engine`).
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
from dataclasses import dataclass
from pathlib import Path

from apps.engine.errors import EngineError

SPARK_CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


@dataclass(frozen=True)
class LocalSpark:
    remote: str  # sc://127.0.0.1:PORT
    pid: int  # the spark-submit process (its JVM is a child in the same group)
    log: Path


def spark_home() -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    home = Path(pyspark.__file__).parent
    return home if (home / "bin" / "spark-submit").exists() else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, timeout: float, process: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return True
        time.sleep(0.5)
    return False


def stop_server(process: subprocess.Popen[bytes], grace: float = 30.0) -> None:
    """Stop a server started in a session of its own: SIGTERM to its process group, then
    SIGKILL if it has not ended within ``grace`` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


@contextlib.contextmanager
def local_spark_server(
    *,
    cores: int = 2,
    driver_memory: str = "1g",
    shuffle_partitions: int = 4,
    timeout: float = 180.0,
    scratch: Path | None = None,
) -> Iterator[LocalSpark]:
    """Start Apache Spark's Spark Connect server in local mode; stop it on exit.
    Raises EngineError (with the end of its log) when it cannot start."""
    home = spark_home()
    if home is None:
        raise EngineError("pyspark (Apache Spark's jars, a dev dependency) is not installed")
    if shutil.which("java") is None:
        raise EngineError("Java is not installed (Debian: openjdk-17-jre-headless)")
    port = free_port()
    folder = scratch or Path(tempfile.mkdtemp(prefix="deidweb-spark-"))
    folder.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": "",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(folder),
    }
    conf = {
        "spark.connect.grpc.binding.port": str(port),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.warehouse.dir": str(folder / "warehouse"),
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={folder}",
    }
    command = [
        str(home / "bin" / "spark-submit"),
        "--class",
        SPARK_CONNECT_CLASS,
        "--master",
        f"local[{cores}]",
        "--driver-memory",
        driver_memory,
        *(part for key, value in conf.items() for part in ("--conf", f"{key}={value}")),
    ]
    log_path = folder / "spark.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=folder,
            start_new_session=True,
        )
        try:
            if not wait_for_port(port, timeout, process):
                tail = log_path.read_text(errors="replace")[-2000:]
                raise EngineError(f"Apache Spark's Spark Connect server did not start:\n{tail}")
            yield LocalSpark(f"sc://127.0.0.1:{port}", process.pid, log_path)
        finally:
            stop_server(process)
            if scratch is None:
                shutil.rmtree(folder, ignore_errors=True)
