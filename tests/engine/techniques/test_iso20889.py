"""Every transformation the engine offers has its ISO/IEC 20889 class."""

from __future__ import annotations

import pytest

from apps.engine.errors import EngineInputError
from apps.engine.masking import MASK_METHODS
from apps.engine.techniques.iso20889 import ISO_20889, SOURCE, iso_20889_class
from apps.engine.techniques.measure import RULE_OF_TECHNIQUE
from apps.engine.techniques.registry import TECHNIQUES

# Made by the search and the apply step rather than by a registered technique.
SEARCH_TRANSFORMATIONS = ("generalization", "attribute_suppression", "record_suppression")


def test_every_transformation_has_a_class() -> None:
    keys = (
        [t.key for t in TECHNIQUES.values()]
        + [f"mask:{m}" for m in MASK_METHODS]
        + list(RULE_OF_TECHNIQUE)  # includes aggregation (tables)
        + list(SEARCH_TRANSFORMATIONS)
    )
    missing = [k for k in keys if k not in ISO_20889]
    assert not missing, f"no ISO/IEC 20889 class for: {missing}"
    assert set(ISO_20889) == set(keys), "a class is recorded for a transformation nobody offers"


@pytest.mark.parametrize(
    ("key", "label"),
    [
        ("rounding", "Generalization techniques — Rounding"),
        ("top_bottom_coding", "Generalization techniques — Top and bottom coding"),
        ("mask:remove", "Suppression techniques — Masking"),
        ("local_suppression", "Suppression techniques — Local suppression"),
        ("record_suppression", "Suppression techniques — Record suppression"),
        ("mask:encrypt", "Cryptographic tools — Deterministic encryption"),
        ("noise", "Randomization techniques — Noise addition"),
        ("rank_swap", "Randomization techniques — Permutation"),
        ("microaggregation", "Randomization techniques — Microaggregation"),
        ("aggregation", "Statistical tools — Aggregation"),
        ("synthetic", "Synthetic data"),
        ("pram", "Randomization techniques"),
    ],
)
def test_classes_as_the_report_prints_them(key: str, label: str) -> None:
    assert iso_20889_class(key).label == label


def test_pseudonyms_are_told_apart_by_how_they_are_made() -> None:
    assert iso_20889_class("mask:hmac").category == "Pseudonymization techniques"
    assert "cryptography" in (iso_20889_class("mask:hmac").technique or "")
    assert "independent" in (iso_20889_class("mask:random").technique or "")
    assert "20889" in SOURCE


def test_an_unknown_transformation_is_named() -> None:
    with pytest.raises(EngineInputError, match="'shuffle'"):
        iso_20889_class("shuffle")
