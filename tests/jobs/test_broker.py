"""The embedded broker (issue 22, item 4): the worker died with "Unrecoverable error:
JSONDecodeError('Expecting value: line 1 column 1')" reading a message file the web process
had not finished writing, and every later job stayed queued. A message is now complete
before any worker can see it, and one that cannot be read is set aside, not fatal."""

from __future__ import annotations

import json
import os
import threading
import uuid
from pathlib import Path

import pytest
from kombu import Connection

from apps.jobs import broker


def connection(folder: Path) -> Connection:
    return Connection(
        "filesystem://",
        transport="apps.jobs.broker:FilesystemTransport",
        transport_options={
            "data_folder_in": str(folder / "queue"),
            "data_folder_out": str(folder / "queue"),
            "processed_folder": str(folder / "processed"),
            "control_folder": str(folder / "control"),
        },
    )


@pytest.fixture
def name() -> str:
    """A queue name of the test's own: kombu keeps the bindings of every connection of a
    process in one table, which a folder of another test's would not have."""
    return f"jobs{uuid.uuid4().hex[:8]}"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for sub in ("queue", "processed", "control"):
        (tmp_path / sub).mkdir()
    return tmp_path


def test_a_message_is_invisible_until_it_is_complete(folder, name, monkeypatch):
    """The writer is held in the middle of writing: no reader sees the message until then."""
    writing, release = threading.Event(), threading.Event()
    real_fdopen = os.fdopen

    class SlowFile:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, data):
            self.handle.write(data[:5])
            self.handle.flush()
            writing.set()
            release.wait(5)
            self.handle.write(data[5:])

    monkeypatch.setattr(broker.os, "fdopen", lambda fd, mode: SlowFile(real_fdopen(fd, mode)))
    producer_conn, consumer_conn = connection(folder), connection(folder)
    queue = producer_conn.SimpleQueue(name)
    writer = threading.Thread(target=lambda: queue.put({"job": "1"}))
    writer.start()
    assert writing.wait(5)
    reader = consumer_conn.SimpleQueue(name)
    with pytest.raises(reader.Empty):  # half written: not there yet
        reader.get(block=False)
    assert [p.name for p in (folder / "queue").iterdir() if p.name.endswith(".msg")] == []
    release.set()
    writer.join(5)
    monkeypatch.undo()
    message = reader.get(timeout=2)
    assert message.payload == {"job": "1"}
    message.ack()


def test_unreadable_messages_are_set_aside_and_the_next_one_is_read(folder, name, caplog):
    conn = connection(folder)
    queue = conn.SimpleQueue(name)
    inbox = folder / "queue"
    (inbox / f"0_a.{name}.msg").write_bytes(b"")  # as a writer leaves it before writing
    (inbox / f"0_b.{name}.msg").write_bytes(b'{"body": "eyJ')  # cut short
    (inbox / f"0_c.{name}.msg").write_text(json.dumps({"no": "properties"}))
    (inbox / f"0_d.{name}.msg").write_text("[1, 2]")
    queue.put({"job": "after the bad ones"})
    with caplog.at_level("ERROR", logger="apps.jobs.broker"):
        message = queue.get(timeout=2)
    assert message.payload == {"job": "after the bad ones"}
    message.ack()
    conn.close()
    rejected = sorted(p.name for p in (folder / "rejected").iterdir())
    assert rejected == [f"0_{x}.{name}.msg" for x in "abcd"]
    assert caplog.text.count("skipped: it is not a complete message") == 4
    assert "(0 bytes, empty)" in caplog.text
    assert list(inbox.iterdir()) == [] and list((folder / "processed").iterdir()) == []


def test_the_settings_use_this_transport_with_the_embedded_broker():
    from deidweb.settings import jobs

    if jobs.CELERY_BROKER_URL.startswith("filesystem://"):
        assert jobs.CELERY_BROKER_TRANSPORT == "apps.jobs.broker:FilesystemTransport"
