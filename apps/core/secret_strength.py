"""Whether a secret looks random (no Django here: the settings use it before set-up).

Production refuses a SECRET_KEY, an audit key or a master key that is not random
(``deidweb/settings/production.py``); the audit trail says when it is sealed with a key that
is public (``apps.audit.services.audit_key_is_public``)."""

from __future__ import annotations

import collections
import math
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
    steps = collections.Counter((data[i + 1] - data[i]) % 256 for i in range(len(data) - 1))
    if steps and steps.most_common(1)[0][1] > 0.5 * (len(data) - 1):
        return "it runs in a sequence"
    return ""
