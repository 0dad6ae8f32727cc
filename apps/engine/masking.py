"""Masking direct identifiers (Step 7.1; PDPC 6, 8, 9).

Methods: remove the column (the default and safest); keyed pseudonyms with
HMAC-SHA-256 under a per-release secret key (same input → same pseudonym within
the release, unlinkable across releases); random pseudonyms with a linking
table; reversible AES-GCM encryption; character masking (at most half of each value
kept); for free text, scrubbing (each span
the detectors of :mod:`apps.engine.freetext` find is replaced by a typed placeholder,
"[NAME]", "[PHONE]").  An unkeyed hash is not
offered: identifiers have few enough possible values to be hashed by brute force
(seed 000 step 7.1).

Keys and linking tables are returned apart from the data (`MaskingResult.secrets`)
so that the caller can store them where only custodians can read them.

Column-wise work (cryptography has no vectorized form, so values are transformed in
Python, each distinct value of a batch once). Keyed pseudonyms and encryption (AES-SIV,
deterministic) are a function of the value and the key alone, so they are computed batch
by batch as the streaming engine reads the rows: memory follows one batch whatever the
number of rows (a unique record number of 100 million rows included). Random pseudonyms
are drawn, not computed: each distinct value's is kept in the linking table, so those
columns' distinct values are collected once (refused past `MAX_MAPPED_VALUES`) and the
column replaced through one `replace_strict` mapping. Character masking is a pure polars
expression.  A LazyFrame stays lazy.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Generic, Literal, TypeVar

import polars as pl
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, AESSIV
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from apps.engine.errors import EngineInputError
from apps.engine.freetext import scrub_expr
from apps.engine.reading import check_columns

MaskMethod = Literal["remove", "hmac", "random", "encrypt", "mask", "scrub"]
MASK_METHODS: tuple[MaskMethod, ...] = ("remove", "hmac", "random", "encrypt", "mask", "scrub")
KEY_BYTES = 32  # 256-bit keys for HMAC-SHA-256 and AES-256-GCM
NONCE_BYTES = 12  # the AES-GCM standard nonce size (tokens of releases before "s1.")
SIV_PREFIX = "s1."  # encrypted tokens: AES-SIV, deterministic
SIV_INFO = b"deidweb masking encrypt s1 AES-256-SIV"
PSEUDONYM_COLUMN = "pseudonym"
# Random pseudonyms hold one entry per distinct value (the value, its pseudonym and the
# linking table row: a few hundred bytes each, in polars and in Python). Past this many
# distinct values a column is refused with a message rather than letting the job outgrow
# memory; keyed pseudonyms (hmac) and encryption have no such limit.
MAX_MAPPED_VALUES = 5_000_000


@dataclass(frozen=True)
class MaskSpec:
    """How to mask one column.  `length` = hex characters of a pseudonym (hmac, random);
    `keep_leading`/`keep_trailing`/`mask_char` for character masking; `key` the key of a
    keyed method (hmac, encrypt) chosen by the caller (e.g. a pseudonymisation domain's),
    else a new one is drawn."""

    method: MaskMethod = "remove"
    length: int = 32
    keep_leading: int = 0
    keep_trailing: int = 0
    mask_char: str = "*"
    key: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True)
class MaskingSecrets:
    """What must be kept apart from the release: keys (hmac, encrypt) and linking tables (random)."""

    keys: Mapping[str, bytes] = field(default_factory=dict)
    linking_tables: Mapping[str, pl.DataFrame] = field(default_factory=dict)


FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)


@dataclass(frozen=True)
class MaskingResult(Generic[FrameT]):
    data: FrameT  # a DataFrame in, a DataFrame out; a LazyFrame stays lazy
    secrets: MaskingSecrets
    methods: Mapping[str, MaskMethod]  # column → method, for the report (holds no secret)


# --------------------------------------------------------------------------- value transforms


def new_key() -> bytes:
    """A fresh random key: one per release, so pseudonyms differ across releases."""
    return secrets.token_bytes(KEY_BYTES)


def hmac_pseudonym(value: str, key: bytes, length: int = 32) -> str:
    """Keyed HMAC-SHA-256 of the value's UTF-8 bytes, as `length` hex characters."""
    return hmac.new(key, value.encode("utf-8"), hashlib.sha256).hexdigest()[:length]


def _siv(key: bytes) -> AESSIV:
    """AES-256-SIV under a 64-byte key derived from the release's column key (HKDF)."""
    derived = HKDF(algorithm=hashes.SHA256(), length=64, salt=None, info=SIV_INFO).derive(key)
    return AESSIV(derived)


def _encrypt_with(siv: AESSIV, value: str, column: str) -> str:
    sealed = siv.encrypt(value.encode("utf-8"), [column.encode("utf-8")])
    return SIV_PREFIX + base64.urlsafe_b64encode(sealed).decode("ascii")


def encrypt_value(value: str, key: bytes, column: str) -> str:
    """Deterministic authenticated encryption (AES-SIV, RFC 5297): the same value gives the
    same token under the same key, so a column is encrypted batch by batch as it streams,
    and equal values stay equal (as they did when each distinct value was encrypted once);
    another release has another key. The column name is authenticated (a value cannot be
    moved to another column unnoticed). Output: ``s1.`` + URL-safe base64."""
    return _encrypt_with(_siv(key), value, column)


def decrypt_value(token: str, key: bytes, column: str) -> str:
    """The value of an `encrypt_value` token; tokens of releases written before ``s1.``
    (AES-GCM with a random nonce, no prefix) are read too."""
    try:
        if token.startswith(SIV_PREFIX):
            raw = base64.urlsafe_b64decode(token[len(SIV_PREFIX) :].encode("ascii"))
            plain = _siv(key).decrypt(raw, [column.encode("utf-8")])
        else:
            raw = base64.urlsafe_b64decode(token.encode("ascii"))
            plain = AESGCM(key).decrypt(
                raw[:NONCE_BYTES], raw[NONCE_BYTES:], column.encode("utf-8")
            )
    except (InvalidTag, ValueError) as exc:
        raise EngineInputError(
            f"cannot decrypt a value of {column!r}: wrong key or damaged data"
        ) from exc
    return plain.decode("utf-8")


def kept_characters(
    expr: pl.Expr, keep_leading: int, keep_trailing: int
) -> tuple[pl.Expr, pl.Expr]:
    """How many leading and trailing characters of each value character masking keeps: as
    many as asked, but never more than half of the value (rounded down), leading ones
    first. A masking that keeps the value is not masking: whatever the counts asked for
    (1,000 leading characters of a name), at least half of every value is hidden, and a
    value of one character is hidden whole."""
    n = expr.cast(pl.String).str.len_chars().cast(pl.Int64)
    budget = n // 2
    lead = pl.min_horizontal(pl.lit(keep_leading), budget)
    trail = pl.min_horizontal(pl.lit(keep_trailing), budget - lead)
    return lead, trail


def character_mask(
    expr: pl.Expr, keep_leading: int, keep_trailing: int, mask_char: str = "*"
) -> pl.Expr:
    """Keep up to n leading and trailing characters, mask the rest ("K1A 0B1" → "K1A****"),
    never keeping more than half of a value (`kept_characters`)."""
    if keep_leading < 0 or keep_trailing < 0 or len(mask_char) != 1:
        raise EngineInputError("character masking: keep counts ≥ 0 and a one-character mask")
    text = expr.cast(pl.String)
    n = text.str.len_chars().cast(pl.Int64)
    lead, trail = kept_characters(text, keep_leading, keep_trailing)
    middle = n - lead - trail
    return text.str.head(lead) + pl.lit("").str.pad_end(middle, mask_char) + text.str.tail(trail)


# --------------------------------------------------------------------------- columns


def _check_key(key: bytes, column: str) -> bytes:
    if len(key) != KEY_BYTES:
        raise EngineInputError(f"key for {column!r} must be {KEY_BYTES} bytes, not {len(key)}")
    return key


def _random_pseudonyms(values: list[str], length: int) -> list[str]:
    chosen: set[str] = set()
    out = []
    for _ in values:
        token = secrets.token_hex((length + 1) // 2)[:length]
        while token in chosen:  # collisions are astronomically rare but must not merge people
            token = secrets.token_hex((length + 1) // 2)[:length]
        chosen.add(token)
        out.append(token)
    return out


def mapped_values_refusal(column: str, method: str, distinct: int) -> str | None:
    """Why `method` cannot mask `column` of about `distinct` distinct values, or None."""
    if method != "random" or distinct <= MAX_MAPPED_VALUES:
        return None
    return (
        f"'{column}' has about {distinct:,} distinct values. Random pseudonyms keep every"
        f" distinct value with its pseudonym in memory (the linking table), at most"
        f" {MAX_MAPPED_VALUES:,} values. Use keyed pseudonyms (HMAC-SHA-256) or encryption,"
        " which are computed batch by batch for any number of values, or remove the column."
    )


def _check_mapped_sizes(frame: pl.LazyFrame, methods: dict[str, MaskMethod]) -> None:
    """Refuse random pseudonyms of a column with too many distinct values,
    from a HyperLogLog estimate (one streaming pass, a few kilobytes), before any of its
    values is collected."""
    if not methods:
        return
    estimates = frame.select(
        pl.col(c).drop_nulls().approx_n_unique().alias(c) for c in methods
    ).collect(engine="streaming")
    for column, method in methods.items():
        refusal = mapped_values_refusal(column, method, int(estimates.get_column(column)[0]))
        if refusal:
            raise EngineInputError(refusal)


def _per_value(transform: Callable[[str], str]) -> Callable[[pl.Series], pl.Series]:
    """A batch function applying `transform` to each distinct value of the batch once
    (nulls stay null)."""

    def batch(values: pl.Series) -> pl.Series:
        text = values.cast(pl.String)
        distinct: list[str] = text.drop_nulls().unique().to_list()
        replaced = [transform(v) for v in distinct]
        return text.replace_strict(distinct, replaced, default=None, return_dtype=pl.String)

    return batch


def mask_direct_identifiers(
    data: FrameT,
    specs: Mapping[str, MaskSpec | MaskMethod],
    *,
    keys: Mapping[str, bytes] | None = None,
) -> MaskingResult[FrameT]:
    """Mask each column of `specs`; other columns pass through unchanged.

    `keys` lets a caller reuse a release's key for a further file of the same
    release; otherwise a new key is drawn per column.  Missing values stay missing.
    """
    frame = data.lazy()
    names = frame.collect_schema().names()
    check_columns(names, list(specs), "direct identifier")
    plans = {c: (MaskSpec(method=s) if isinstance(s, str) else s) for c, s in specs.items()}
    for column, spec in plans.items():
        if spec.method not in MASK_METHODS:
            raise EngineInputError(f"unknown masking method {spec.method!r} for {column!r}")
        if spec.method in ("hmac", "random") and not 8 <= spec.length <= 64:
            raise EngineInputError(f"pseudonym length for {column!r} must be 8-64 hex characters")
    mapped = [c for c, s in plans.items() if s.method == "random"]
    _check_mapped_sizes(frame, {c: plans[c].method for c in mapped})
    distinct = dict(
        zip(
            mapped,
            pl.collect_all(
                [frame.select(pl.col(c).cast(pl.String).unique().drop_nulls()) for c in mapped],
                engine="streaming",
            ),
            strict=True,
        )
    )
    out_keys: dict[str, bytes] = {}
    tables: dict[str, pl.DataFrame] = {}
    replacements: list[pl.Expr] = []
    for column, spec in plans.items():
        if spec.method == "remove":
            continue
        if spec.method == "scrub":
            replacements.append(scrub_expr(pl.col(column)).alias(column))
            continue
        if spec.method == "mask":
            replacements.append(
                character_mask(
                    pl.col(column), spec.keep_leading, spec.keep_trailing, spec.mask_char
                ).alias(column)
            )
            continue
        if spec.method in ("hmac", "encrypt"):
            key = _check_key(spec.key or (keys or {}).get(column) or new_key(), column)
            out_keys[column] = key
            if spec.method == "hmac":
                transform = partial(hmac_pseudonym, key=key, length=spec.length)
            else:
                transform = partial(_encrypt_with, _siv(key), column=column)
            replacements.append(
                pl.col(column)
                .map_batches(_per_value(transform), return_dtype=pl.String, is_elementwise=True)
                .alias(column)
            )
            continue
        # random pseudonyms: one drawn per distinct value, kept in the linking table
        values: list[str] = distinct[column].to_series().to_list()
        new_values = _random_pseudonyms(values, spec.length)
        tables[column] = pl.DataFrame(
            {column: values, PSEUDONYM_COLUMN: new_values},
            schema={column: pl.String, PSEUDONYM_COLUMN: pl.String},
        )
        replacements.append(
            pl.col(column)
            .cast(pl.String)
            .replace_strict(values, new_values, return_dtype=pl.String)
            .alias(column)
        )
    removed = [c for c, s in plans.items() if s.method == "remove"]
    result = frame.with_columns(replacements).drop(removed)
    return MaskingResult(
        data=result.collect() if isinstance(data, pl.DataFrame) else result,
        secrets=MaskingSecrets(keys=out_keys, linking_tables=tables),
        methods={c: s.method for c, s in plans.items()},
    )


def decrypt_column(data: pl.DataFrame, column: str, key: bytes) -> pl.DataFrame:
    """Undo `encrypt` on one column (custodian only), decrypting each distinct token once."""
    check_columns(data.columns, [column], "encrypted")
    tokens: list[str] = data.get_column(column).drop_nulls().unique().to_list()
    plain = [decrypt_value(t, _check_key(key, column), column) for t in tokens]
    return data.with_columns(pl.col(column).replace_strict(tokens, plain, return_dtype=pl.String))


def relink_column(data: pl.DataFrame, column: str, linking_table: pl.DataFrame) -> pl.DataFrame:
    """Undo `random` pseudonyms on one column with its linking table (custodian only)."""
    check_columns(data.columns, [column], "pseudonymized")
    return data.with_columns(
        pl.col(column).replace_strict(
            linking_table.get_column(PSEUDONYM_COLUMN),
            linking_table.get_column(column),
            return_dtype=pl.String,
        )
    )
