from __future__ import annotations

import hashlib
import hmac

import polars as pl
import pytest

from apps.engine.errors import EngineInputError
from apps.engine.masking import (
    MaskSpec,
    character_mask,
    decrypt_column,
    hmac_pseudonym,
    mask_direct_identifiers,
    new_key,
    relink_column,
)

PEOPLE = pl.DataFrame(
    {
        "name": ["Ann", "Bob", "Ann", None],
        "sin": ["046454286", "123456782", "046454286", "987654321"],
        "postal": ["K1A 0B1", "M5V 3L9", "K1A 0B1", "AB"],
        "age": ["30", "41", "30", "52"],
    }
)
KEY_A = bytes(range(32))
KEY_B = bytes(range(1, 33))


def test_remove_is_the_default() -> None:
    result = mask_direct_identifiers(PEOPLE, {"name": "remove", "sin": MaskSpec()})
    assert result.data.columns == ["postal", "age"]
    assert not result.secrets.keys and not result.secrets.linking_tables


def test_hmac_is_keyed_and_deterministic_within_a_key() -> None:
    first = mask_direct_identifiers(PEOPLE, {"sin": "hmac"}, keys={"sin": KEY_A}).data
    again = mask_direct_identifiers(PEOPLE, {"sin": "hmac"}, keys={"sin": KEY_A}).data
    other = mask_direct_identifiers(PEOPLE, {"sin": "hmac"}, keys={"sin": KEY_B}).data
    assert isinstance(first, pl.DataFrame) and isinstance(other, pl.DataFrame)
    sins = first.get_column("sin").to_list()
    assert sins[0] == sins[2] != sins[1]  # same input → same pseudonym
    assert sins == again.get_column("sin").to_list()
    assert set(sins).isdisjoint(other.get_column("sin").to_list())  # new key → unlinkable
    expected = hmac.new(KEY_A, b"046454286", hashlib.sha256).hexdigest()[:32]
    assert sins[0] == expected == hmac_pseudonym("046454286", KEY_A)
    assert sins[0] != hashlib.sha256(b"046454286").hexdigest()[:32]  # never an unkeyed hash


def test_hmac_key_is_returned_apart_and_fresh_per_release() -> None:
    one = mask_direct_identifiers(PEOPLE, {"sin": "hmac"})
    two = mask_direct_identifiers(PEOPLE, {"sin": "hmac"})
    assert len(one.secrets.keys["sin"]) == 32
    assert one.secrets.keys["sin"] != two.secrets.keys["sin"]
    assert isinstance(one.data, pl.DataFrame)
    assert "046454286" not in one.data.get_column("sin").to_list()
    assert one.methods == {"sin": "hmac"}


def test_random_pseudonyms_with_linking_table() -> None:
    result = mask_direct_identifiers(PEOPLE, {"name": MaskSpec("random", length=12)})
    data = result.data
    assert isinstance(data, pl.DataFrame)
    names = data.get_column("name").to_list()
    assert names[0] == names[2] != names[1] and names[3] is None  # missing stays missing
    assert all(len(n) == 12 for n in names if n is not None)
    table = result.secrets.linking_tables["name"]
    assert sorted(table.get_column("name").to_list()) == ["Ann", "Bob"]
    assert dict(table.iter_rows())["Ann"] == names[0]
    assert (
        relink_column(data, "name", table).get_column("name").to_list() == PEOPLE["name"].to_list()
    )


def test_encryption_round_trip() -> None:
    result = mask_direct_identifiers(PEOPLE, {"sin": "encrypt"})
    data = result.data
    assert isinstance(data, pl.DataFrame)
    tokens = data.get_column("sin").to_list()
    assert tokens[0] == tokens[2] and "046454286" not in tokens
    assert all(t.startswith("s1.") for t in tokens)
    key = result.secrets.keys["sin"]
    assert decrypt_column(data, "sin", key).get_column("sin").to_list() == PEOPLE["sin"].to_list()
    with pytest.raises(EngineInputError, match="wrong key"):
        decrypt_column(data, "sin", new_key())


def test_character_masking() -> None:
    spec = MaskSpec("mask", keep_leading=3)
    data = mask_direct_identifiers(PEOPLE, {"postal": spec}).data
    assert isinstance(data, pl.DataFrame)
    # "K1A 0B1" keeps 3 → "K1A****"; "AB" keeps 1 so that at least one character is hidden
    assert data.get_column("postal").to_list() == ["K1A****", "M5V****", "K1A****", "A*"]
    # 2 leading and 3 trailing asked of 9 characters: at most 4 (half) are kept, leading first
    both = pl.DataFrame({"s": ["123456789", "", None]}).select(
        character_mask(pl.col("s"), 2, 3, "#")
    )
    assert both.get_column("s").to_list() == ["12#####89", "", None]


def test_character_masking_never_keeps_more_than_half_of_a_value() -> None:
    """#23: 1,000 leading characters kept of a full name released every name minus its last
    letter. Whatever is asked, at least half of each value is masked."""
    names = pl.DataFrame({"n": ["Patient Jane Doe", "Al", "X", "Marie-Claude Tremblay"]})
    kept = names.select(character_mask(pl.col("n"), 1000, 0)).get_column("n").to_list()
    assert kept == ["Patient ********", "A*", "*", "Marie-Clau***********"]
    trailing = names.select(character_mask(pl.col("n"), 0, 1000)).get_column("n").to_list()
    assert trailing == ["********Jane Doe", "*l", "*", "***********e Tremblay"]
    for original, masked in zip(names.get_column("n").to_list(), kept, strict=True):
        assert masked.count("*") >= (len(original) + 1) // 2


def test_lazy_input_stays_lazy() -> None:
    result = mask_direct_identifiers(PEOPLE.lazy(), {"name": "hmac", "sin": "remove"})
    assert isinstance(result.data, pl.LazyFrame)
    assert result.data.collect().columns == ["name", "postal", "age"]


def test_keyed_pseudonyms_are_computed_batch_by_batch_in_the_stream(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A unique record number of 100 million rows had its distinct values collected (and a
    Python list of them built) before the first pseudonym: tens of GB. A keyed pseudonym
    depends on the value only, so each batch of the stream is pseudonymized on its own:
    no in-memory step, and the same value gets the same pseudonym in every batch."""
    from tests.streaming_plan import in_memory_fallbacks

    path = tmp_path / "ids.parquet"
    ids = [f"{n % 700:09d}" for n in range(3000)] + [None] * 5
    pl.DataFrame({"mrn": ids, "age": ["30"] * len(ids)}).write_parquet(path, row_group_size=100)
    scanned = pl.scan_parquet(path)
    masked = mask_direct_identifiers(scanned, {"mrn": "hmac"}, keys={"mrn": KEY_A}).data
    assert in_memory_fallbacks(masked) == []
    out = masked.collect(engine="streaming").get_column("mrn").to_list()
    assert out[:3000] == [hmac_pseudonym(f"{n % 700:09d}", KEY_A) for n in range(3000)]
    assert out[3000:] == [None] * 5
    assert out[0] == out[700] == out[2800]  # row groups 1, 8 and 29
    assert len(set(out[:3000])) == 700


def test_encryption_is_deterministic_per_key_streams_and_reads_older_tokens(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """AES-SIV: the same value, column and key give the same token in every batch (so the
    column streams like keyed pseudonyms); another key or column gives another token; a
    token of a release written before (AES-GCM with a random nonce) still decrypts."""
    import base64

    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from apps.engine.masking import decrypt_value, encrypt_value
    from tests.streaming_plan import in_memory_fallbacks

    token = encrypt_value("046454286", KEY_A, "sin")
    assert token == encrypt_value("046454286", KEY_A, "sin")
    assert token != encrypt_value("046454286", KEY_B, "sin")
    assert token != encrypt_value("046454286", KEY_A, "mrn")
    assert decrypt_value(token, KEY_A, "sin") == "046454286"
    with pytest.raises(EngineInputError, match="wrong key or damaged data"):
        decrypt_value(token, KEY_A, "mrn")  # moved to another column
    nonce = bytes(12)
    older = base64.urlsafe_b64encode(
        nonce + AESGCM(KEY_A).encrypt(nonce, b"046454286", b"sin")
    ).decode("ascii")
    assert decrypt_value(older, KEY_A, "sin") == "046454286"

    path = tmp_path / "ids.parquet"
    ids = [f"{n % 300:09d}" for n in range(1200)]
    pl.DataFrame({"mrn": ids}).write_parquet(path, row_group_size=100)
    masked = mask_direct_identifiers(pl.scan_parquet(path), {"mrn": "encrypt"}, keys={"mrn": KEY_A})
    assert in_memory_fallbacks(masked.data) == []
    out = masked.data.collect(engine="streaming").get_column("mrn").to_list()
    assert out == [encrypt_value(v, KEY_A, "mrn") for v in ids]
    assert (
        decrypt_column(pl.DataFrame({"mrn": out}), "mrn", KEY_A).get_column("mrn").to_list() == ids
    )


def test_masking_errors() -> None:
    with pytest.raises(EngineInputError, match="unknown direct identifier"):
        mask_direct_identifiers(PEOPLE, {"nope": "remove"})
    with pytest.raises(EngineInputError, match="32 bytes"):
        mask_direct_identifiers(PEOPLE, {"sin": "hmac"}, keys={"sin": b"short"})
    with pytest.raises(EngineInputError, match="8-64"):
        mask_direct_identifiers(PEOPLE, {"sin": MaskSpec("hmac", length=4)})
