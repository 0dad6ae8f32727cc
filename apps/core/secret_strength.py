"""Whether a secret looks random (no Django here: the settings use it before set-up).

Production refuses a SECRET_KEY, an audit key or a master key that is not random
(``deidweb/settings/production.py``); the audit trail says when it is sealed with a key that
is public (``apps.audit.services.audit_key_is_public``)."""

from __future__ import annotations

import base64
import binascii
import collections
import math
import re
import zlib

# Values that are public (defaults, documentation, tests) or words no generator produces.
KNOWN_WEAK_SECRETS = frozenset(
    {
        "insecure-local-development-key-change-me",
        "test-secret-key-not-for-production-0123456789abcdef",
        "zgvpzhdlyi10zxn0lw1hc3rlci1rzxktmzitynl0zxm=",  # the test suite's master key
    }
)
WEAK_SECRET_WORDS = (
    "changeme",
    "change-me",
    "change_me",
    "insecure",
    "example",
    "password",
    "secret",
    "default",
    "deidweb",
    "django",
)
MIN_SECRET_BITS = 128


def secret_weakness(secret: str | bytes) -> str:
    """Why ``secret`` is not a random value ("" when nothing shows it is not).

    A text secret (SECRET_KEY) or raw key bytes (a master key) is refused when it is a known
    public value or holds a telltale word, when its characters are too few or too uneven to
    carry 128 bits (Shannon entropy of its symbol frequencies × its length), when it repeats
    itself (it compresses to under 70 %), or when it runs in a sequence (most steps from one
    symbol to the next are the same). Random keys pass: 2,000 of each generator do in the
    tests; "x" × 50, "0123…9" × 5, "abc…" and an all-zero key do not."""
    data = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
    text = data.decode("latin-1").strip().lower()
    if not data:
        return "it is empty"
    if text in KNOWN_WEAK_SECRETS or text.startswith(("insecure-", "django-insecure-")):
        return "it is a known, published value"
    if isinstance(secret, str):
        word = next((w for w in WEAK_SECRET_WORDS if w in text), "")
        if word:
            return f"it contains the word '{word}', which no random generator writes"
    elif all(32 <= b < 127 for b in data):
        return "its bytes are readable text, not random bytes"
    counts = collections.Counter(data)
    distinct = len(counts)
    if distinct < (16 if isinstance(secret, bytes) else 10):
        return f"it has only {distinct} different characters"
    bits = -sum(n * math.log2(n / len(data)) for n in counts.values())
    if bits < MIN_SECRET_BITS:
        return f"its characters carry about {bits:.0f} bits, fewer than {MIN_SECRET_BITS}"
    if isinstance(secret, str) and len(zlib.compress(data, 9)) < 0.7 * len(data):
        return "it repeats itself"
    pattern = _pattern(data)
    if pattern:
        return pattern
    encoded = _decoded(secret.strip()) if isinstance(secret, str) else None
    if encoded is not None:
        pattern = _pattern(encoded, encoded=True)
        if pattern:
            return f"the bytes it encodes (hex or base64) are not random: {pattern}"
    return ""


def _pattern(data: bytes, *, encoded: bool = False) -> str:
    """Why ``data`` has a shape no generator gives it ("" when it has none): it repeats a
    part (too few different 4-grams: compression misses a short text said twice), it steps
    by one amount (a counter, an arithmetic sequence) or by steps that change by one amount
    (a quadratic sequence); of decoded bytes, also too few different bytes."""
    if encoded and len(data) >= 24 and len(set(data)) < 16:
        return f"it has only {len(set(data))} different bytes"
    grams = len(data) - 3
    if grams >= 16 and len({data[i : i + 4] for i in range(grams)}) < 0.75 * grams:
        return "it repeats itself"
    steps = [(data[i + 1] - data[i]) % 256 for i in range(len(data) - 1)]
    for order in (steps, [(steps[i + 1] - steps[i]) % 256 for i in range(len(steps) - 1)]):
        if order and collections.Counter(order).most_common(1)[0][1] > 0.5 * len(order):
            return "it runs in a sequence"
    return ""


_HEX = re.compile(r"(?:[0-9a-f]{2})+")
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")


def _decoded(text: str) -> bytes | None:
    """The bytes a text secret spells in hex or base64 (standard or URL-safe), when it is
    one of those and spells at least 16 bytes."""
    if len(text) >= 32 and _HEX.fullmatch(text.lower()):
        return bytes.fromhex(text)
    if len(text) >= 22 and _BASE64.fullmatch(text):
        body = text.rstrip("=").replace("-", "+").replace("_", "/")
        try:
            return base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
        except (binascii.Error, ValueError):
            return None
    return None
