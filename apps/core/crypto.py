"""Envelope encryption of the secrets deidweb keeps at rest (#15, OWASP ASVS 6.2, 6.4).

Every secret — a release's pseudonymization keys and linking tables, an organization's
signing passphrase — is encrypted with a **data key of its own** (AES-256-GCM, 32 random
bytes, a random 96-bit nonce). The data key is stored only **wrapped**: encrypted with the
**master key**, which lives in the environment (``DEIDWEB_MASTER_KEY``), never in the
database or the storage backend. A copy of the database, of the storage, or of both, gives
nothing without the master key.

A wrapped key names the master key that wrapped it (a 16-hex key id, the first 64 bits of
the SHA-256 of the key), so the master key can be rotated: with the new key in
``DEIDWEB_MASTER_KEY`` and the old one in ``DEIDWEB_MASTER_KEY_PREVIOUS`` both are
readable, and ``manage.py rotate_master_key`` re-wraps every data key under the new one.
Re-wrapping touches only the wrapped keys: the encrypted secrets themselves (and so the
digests recorded of stored files) do not change.

Forms:

* a **wrapped key**: ``dwk1.<key id>.<base64url(nonce ‖ AES-GCM(master, data key))>``;
* a **sealed text** (a database field): a wrapped key, ``.``, and
  ``base64url(nonce ‖ AES-GCM(data key, text))``, all ASCII;
* a **sealed file**: ``FILE_MAGIC ‖ nonce ‖ AES-GCM(data key, bytes)``, its wrapped key
  kept on the database row that names the file (so rotation never rewrites a file).

Each encryption authenticates a ``purpose`` (associated data, e.g. ``organization <id>
signing passphrase``): a value copied into another row or field does not open there.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

VERSION = "dwk1"
FILE_MAGIC = b"DEIDWEB-SEALED-1\n"
KEY_BYTES = 32
NONCE_BYTES = 12
_WRAP_CONTEXT = b"deidweb data key wrapped by master key "


class SecretUnreadable(Exception):
    """A sealed value that cannot be opened: damaged, sealed for another purpose, or
    wrapped by a master key this process does not hold."""


@dataclass(frozen=True)
class MasterKey:
    key: bytes

    @property
    def key_id(self) -> str:
        """Names the key without revealing it: 64 bits of its SHA-256."""
        return hashlib.sha256(b"deidweb master key id\x00" + self.key).hexdigest()[:16]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise SecretUnreadable("not a sealed value (bad base64)") from None


def _master(text: str, name: str) -> MasterKey:
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != KEY_BYTES:
        raise ImproperlyConfigured(f"{name} must be {KEY_BYTES} random bytes in base64.")
    return MasterKey(raw)


def current_master_key() -> MasterKey:
    """The key every new secret is wrapped with."""
    text = getattr(settings, "DEIDWEB_MASTER_KEY", "")
    if not text:
        raise ImproperlyConfigured(
            "DEIDWEB_MASTER_KEY is not set: deidweb cannot keep keys or passphrases at rest."
        )
    return _master(text, "DEIDWEB_MASTER_KEY")


def master_keys() -> dict[str, MasterKey]:
    """Every master key this process can unwrap with, by key id: the current one and,
    during a rotation, the previous one."""
    current = current_master_key()
    keys = {current.key_id: current}
    previous = getattr(settings, "DEIDWEB_MASTER_KEY_PREVIOUS", "")
    if previous:
        old = _master(previous, "DEIDWEB_MASTER_KEY_PREVIOUS")
        keys.setdefault(old.key_id, old)
    return keys


def _wrap(data_key: bytes, master: MasterKey) -> str:
    nonce = os.urandom(NONCE_BYTES)
    wrapped = AESGCM(master.key).encrypt(
        nonce, data_key, _WRAP_CONTEXT + master.key_id.encode("ascii")
    )
    return f"{VERSION}.{master.key_id}.{_b64(nonce + wrapped)}"


def _split(token: str) -> list[str]:
    parts = token.split(".")
    if len(parts) not in (3, 4) or parts[0] != VERSION:
        raise SecretUnreadable("not a sealed value (unknown format)")
    return parts


def key_id_of(token: str) -> str:
    """The id of the master key that wrapped a wrapped key or a sealed text."""
    return _split(token)[1]


def is_sealed(value: str) -> bool:
    return value.startswith(f"{VERSION}.")


def _unwrap(token: str) -> bytes:
    _version, key_id, wrapped, *_rest = _split(token)
    master = master_keys().get(key_id)
    if master is None:
        raise SecretUnreadable(
            f"wrapped by master key {key_id}, which is neither DEIDWEB_MASTER_KEY nor "
            "DEIDWEB_MASTER_KEY_PREVIOUS"
        )
    blob = _unb64(wrapped)
    try:
        return AESGCM(master.key).decrypt(
            blob[:NONCE_BYTES], blob[NONCE_BYTES:], _WRAP_CONTEXT + key_id.encode("ascii")
        )
    except InvalidTag:
        raise SecretUnreadable(f"the data key wrapped by {key_id} is damaged") from None


def rewrap(token: str) -> str:
    """The same wrapped key or sealed text, its data key wrapped by the current master key
    (unchanged when it already is); the encrypted secret itself is kept as it is."""
    current = current_master_key()
    parts = _split(token)
    if parts[1] == current.key_id:
        return token
    rewrapped = _wrap(_unwrap(token), current)
    return ".".join([rewrapped, *parts[3:]])


def _encrypt(data_key: bytes, plaintext: bytes, purpose: str) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(data_key).encrypt(nonce, plaintext, purpose.encode("utf-8"))


def _decrypt(data_key: bytes, blob: bytes, purpose: str) -> bytes:
    try:
        return AESGCM(data_key).decrypt(
            blob[:NONCE_BYTES], blob[NONCE_BYTES:], purpose.encode("utf-8")
        )
    except InvalidTag:
        raise SecretUnreadable(
            f"the sealed value is damaged or was not sealed for {purpose!r}"
        ) from None


def seal_text(plaintext: str, *, purpose: str) -> str:
    """A short secret (a passphrase) as ASCII text for a database field."""
    data_key = AESGCM.generate_key(bit_length=256)
    sealed = _encrypt(data_key, plaintext.encode("utf-8"), purpose)
    return f"{_wrap(data_key, current_master_key())}.{_b64(sealed)}"


def open_text(sealed: str, *, purpose: str) -> str:
    parts = _split(sealed)
    if len(parts) != 4:
        raise SecretUnreadable("a wrapped key, not a sealed text")
    return _decrypt(_unwrap(sealed), _unb64(parts[3]), purpose).decode("utf-8")


def seal_bytes(plaintext: bytes, *, purpose: str) -> tuple[str, bytes]:
    """A file's content sealed: (its wrapped data key, for the database; the bytes to
    store)."""
    data_key = AESGCM.generate_key(bit_length=256)
    return _wrap(data_key, current_master_key()), FILE_MAGIC + _encrypt(
        data_key, plaintext, purpose
    )


def open_bytes(wrapped_key: str, sealed: bytes, *, purpose: str) -> bytes:
    if len(_split(wrapped_key)) != 3:
        raise SecretUnreadable("a sealed text, not a wrapped key")
    if not sealed.startswith(FILE_MAGIC):
        raise SecretUnreadable("not a sealed file")
    return _decrypt(_unwrap(wrapped_key), sealed[len(FILE_MAGIC) :], purpose)
