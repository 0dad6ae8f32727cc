"""The embedded broker: kombu's filesystem transport, safe for a web process and workers.

kombu's own transport opens a message file under its final name and then writes it, while
a worker may already be moving that file out of the queue and reading it: it reads an
empty or half-written message, and the JSONDecodeError ends the worker ("Unrecoverable
error"), after which every job stays queued. Here a message is written under a temporary
name that no queue matches and renamed into the queue once complete (a rename within a
folder is atomic), a worker claims a message by renaming it into the processed folder
(only one worker can), and a message that cannot be read — truncated, not JSON, not a
message — is logged and moved aside to ``rejected/`` beside the queue, never fatal.

Selected by ``CELERY_BROKER_TRANSPORT`` with the ``filesystem://`` broker URL (settings).
"""

from __future__ import annotations

import binascii
import logging
import os
import uuid
from pathlib import Path
from queue import Empty
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)

# A name no queue matches: kombu finds a queue's messages as "<stamp>_<id>.<queue>.msg",
# comparing what follows the first dot, and ".<id>.tmp" has "<id>.tmp" there.
_TEMPORARY = ".{}.tmp"


class Channel(filesystem.Channel):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]
        # A worker or web process started before any folder exists (a plain
        # `celery -A deidweb worker` on a new checkout) makes them, private.
        for folder in (self.data_folder_in, self.data_folder_out, self.processed_folder):
            Path(folder).mkdir(mode=0o700, parents=True, exist_ok=True)

    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Write `payload` completely under a temporary name, then rename it into `queue`."""
        folder = Path(self.data_folder_out)
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        temporary = folder / _TEMPORARY.format(uuid.uuid4())
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(str_to_bytes(dumps(payload)))  # type: ignore[no-untyped-call]
            os.replace(temporary, folder / name)
        except OSError as exc:
            temporary.unlink(missing_ok=True)
            raise ChannelError(f"Cannot add file {name!r} to directory") from exc

    def _get(self, queue: Any, timeout: Any = None) -> Any:
        """The next readable message of `queue`; unreadable ones are set aside."""
        wanted = f"{queue}.msg"
        inbox = Path(self.data_folder_in)
        processed = Path(self.processed_folder)
        processed.mkdir(parents=True, exist_ok=True)
        for filename in sorted(os.listdir(inbox)):
            if filename.partition(".")[2] != wanted:
                continue
            claimed = processed / filename
            try:
                os.rename(inbox / filename, claimed)  # only one reader gets it
            except OSError:
                continue  # taken by another worker meanwhile
            try:
                raw = claimed.read_bytes()
            except OSError as exc:
                raise ChannelError(f"Cannot read file {filename!r} from queue.") from exc
            payload = self._readable(raw)
            if payload is None:
                self._reject(claimed, raw)
                continue
            if not self.store_processed:
                claimed.unlink(missing_ok=True)
            return payload
        raise Empty()

    def _readable(self, raw: bytes) -> Any:
        """The message in `raw`, or None when it is not one a consumer can take."""
        try:
            payload = loads(bytes_to_str(raw))  # type: ignore[no-untyped-call]
            properties = payload["properties"]
            properties["delivery_tag"]  # noqa: B018  # kombu needs it to acknowledge
            body = payload.get("body")
            if body:
                self.decode_body(body, properties.get("body_encoding"))  # type: ignore[no-untyped-call]
        except (ValueError, TypeError, KeyError, binascii.Error, UnicodeDecodeError):
            return None
        return payload

    def _reject(self, claimed: Path, raw: bytes) -> None:
        rejected = Path(self.data_folder_in).parent / "rejected"
        rejected.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            os.replace(claimed, rejected / claimed.name)
        except OSError:
            claimed.unlink(missing_ok=True)
        logger.error(
            "broker message %s skipped: it is not a complete message (%d bytes%s); moved to %s",
            claimed.name,
            len(raw),
            ", empty" if not raw else "",
            rejected,
        )

    @property
    def processed_folder(self) -> str:
        # kombu moves processed messages to the system's temporary folder unless it keeps
        # them: a move across file systems is a copy, which two workers can both make.
        folder: str = self.transport_options.get("processed_folder") or str(
            Path(self.data_folder_in).parent / "processed"
        )
        return folder


class FilesystemTransport(filesystem.Transport):
    Channel = Channel
