"""Issue 23, item 14: production refuses secrets that are not random. It started with a
``SECRET_KEY`` of 50 identical characters and an all-zero master key; Django's own check
(50 characters, 5 different) is met by "abcde" × 10.

The check (``deidweb.settings.env.secret_weakness``) is general: known published values and
telltale words, too few different characters, too little entropy in their frequencies, a value
that repeats itself or runs in a sequence. Every random generator's keys pass (2,000 each)."""

from __future__ import annotations

import base64
import os
import secrets

import pytest
from django.core.management.utils import get_random_secret_key

from apps.core.secret_strength import secret_weakness
from tests.core.test_deploy import production

WEAK_SECRET_KEYS = [
    ("x" * 50, "only 1 different characters"),
    ("ab" * 25, "only 2 different characters"),
    ("abcde" * 10, "only 5 different characters"),  # passes Django's security.W009
    ("0123456789" * 5, "repeats itself"),
    ("q9Zt-Lm3Xp" * 6, "repeats itself"),
    ("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMN", "runs in a sequence"),
    ("ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedc", "runs in a sequence"),
    ("insecure-local-development-key-change-me-" + "k" * 20, "known, published value"),
    ("my-production-secret-key-for-the-deid-service-2026", "contains the word 'secret'"),
    ("please-changeme-before-going-live-in-production-xyz", "contains the word 'changeme'"),
    ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaabcdefghijk", "carry about"),
]
WEAK_MASTER_KEYS = [
    (bytes(32), "only 1 different characters"),
    (b"\xff" * 32, "only 1 different characters"),
    (bytes(range(32)), "runs in a sequence"),
    (bytes(range(0, 256, 8)), "runs in a sequence"),
    (b"\x01\x02\x03\x04" * 8, "only 4 different characters"),
    (b"deidweb-test-master-key-32-bytes", "readable text, not random bytes"),
    (bytes([7] * 16 + list(range(100, 116))), "carry about 96 bits"),
]


@pytest.mark.parametrize(("value", "reason"), WEAK_SECRET_KEYS)
def test_weak_text_secrets_are_named(value, reason):
    assert reason in secret_weakness(value)


@pytest.mark.parametrize(("value", "reason"), WEAK_MASTER_KEYS)
def test_weak_master_keys_are_named(value, reason):
    assert len(value) == 32
    assert reason in secret_weakness(value)


@pytest.mark.parametrize(
    "make",
    [
        lambda: secrets.token_urlsafe(50),
        lambda: secrets.token_hex(32),
        lambda: secrets.token_hex(25),
        get_random_secret_key,
        lambda: base64.b64encode(os.urandom(48)).decode(),
        lambda: os.urandom(32),
    ],
    ids=["token_urlsafe(50)", "token_hex(32)", "token_hex(25)", "django", "base64", "raw 32"],
)
def test_random_secrets_pass(make):
    refused = [v for v in (make() for _ in range(2000)) if secret_weakness(v)]
    assert refused == []


def test_production_refuses_a_secret_key_of_identical_characters(tmp_path):
    result = production(tmp_path, "manage.py", "check", SECRET_KEY="x" * 50)
    assert result.returncode != 0
    assert "SECRET_KEY is not random: it has only 1 different characters." in result.stderr
    assert "secrets.token_urlsafe(50)" in result.stderr


def test_production_refuses_a_key_that_passes_djangos_own_check(tmp_path):
    result = production(tmp_path, "manage.py", "check", SECRET_KEY="abcde" * 10)
    assert result.returncode != 0
    assert "SECRET_KEY is not random: it has only 5 different characters." in result.stderr


def test_production_refuses_an_all_zero_master_key(tmp_path):
    zero = base64.b64encode(bytes(32)).decode()
    result = production(tmp_path, "manage.py", "check", DEIDWEB_MASTER_KEY=zero)
    assert result.returncode != 0
    assert "DEIDWEB_MASTER_KEY is not random: it has only 1 different characters." in result.stderr
    assert "rotate_master_key" in result.stderr


def test_production_refuses_a_weak_audit_key_when_one_is_set(tmp_path):
    result = production(tmp_path, "manage.py", "check", DEIDWEB_AUDIT_KEY="audit" * 10)
    assert result.returncode != 0
    assert "DEIDWEB_AUDIT_KEY is not random" in result.stderr


def test_production_starts_with_random_secrets(tmp_path):
    result = production(tmp_path, "manage.py", "check", DEIDWEB_AUDIT_KEY=secrets.token_urlsafe(40))
    assert result.returncode == 0, result.stderr[-2000:]


def _structured_bytes(n: int, seed: int) -> list[bytes]:
    """Byte strings with little randomness in them, of many shapes: counters, arithmetic and
    quadratic progressions, a few random bytes repeated, a short random block padded."""
    import random

    rng = random.Random(seed)
    start, step = rng.randrange(256), rng.randrange(1, 256)
    block = rng.randbytes(rng.choice([4, 6, 8]))
    return [
        bytes((start + i) % 256 for i in range(n)),
        bytes((start + step * i) % 256 for i in range(n)),
        bytes((start + i * i * step) % 256 for i in range(n)),
        (block * n)[:n],
        rng.randbytes(6) + bytes(n - 6),
    ]


@pytest.mark.parametrize("seed", range(12))
def test_an_encoded_secret_is_judged_by_the_bytes_it_encodes(seed):
    """Base64 or hex hides a pattern from a look at the characters: ``base64(bytes(range(38)))``
    has 50 different-looking characters. A secret that decodes is judged by its bytes too."""
    for raw in _structured_bytes(38, seed):
        for encoded in (
            base64.b64encode(raw).decode(),
            base64.urlsafe_b64encode(raw).decode().rstrip("="),
            raw.hex(),
            raw.hex().upper(),
        ):
            assert secret_weakness(encoded), (raw, encoded)
    master = _structured_bytes(32, seed)
    for raw in master:
        assert secret_weakness(raw), raw


def test_a_secret_made_of_one_part_said_twice_repeats_itself():
    """A phrase or a random value said twice carries the bits of one (compression misses it
    in short texts)."""
    for once in (
        "correct-horse-battery-staple",
        secrets.token_urlsafe(20),
        secrets.token_hex(14),
    ):
        assert "repeats itself" in secret_weakness(once + "-" + once), once
