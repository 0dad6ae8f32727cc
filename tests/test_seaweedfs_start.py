"""The SeaweedFS server the object-storage tests run against (tests/seaweedfs.py) starts
again on new ports when a port it was given is taken before it binds it: in the whole
suite another process took one, SeaweedFS exited, and a module's tests errored."""

from __future__ import annotations

import itertools
import socket

import pytest

from tests import seaweedfs


def test_a_taken_port_means_a_new_start_not_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = int(taken.getsockname()[1])
        free = seaweedfs._free_port
        picks = itertools.count()
        # the first port handed out (the master's) is one another process holds
        monkeypatch.setattr(seaweedfs, "_free_port", lambda: busy if next(picks) == 0 else free())
        with seaweedfs.seaweedfs_server() as server:
            assert server.client().list_buckets()["Buckets"] == []
            assert str(busy) not in server.endpoint_url
        assert next(picks) == 8  # two starts of four ports each


def test_a_server_that_never_starts_fails_with_its_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seaweedfs, "weed_binary", lambda: "/bin/false")
    with (
        pytest.raises(RuntimeError, match="SeaweedFS exited early") as failure,
        seaweedfs.seaweedfs_server(),
    ):
        pass  # pragma: no cover
    assert "weed.log" in str(failure.value)
