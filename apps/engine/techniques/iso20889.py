"""The ISO/IEC 20889 class of every transformation the engine offers.

The EMA anonymisation report and ISO/IEC 27559 ask that each transformation be named in
the standard's terms.  ISO/IEC 20889:2018 (clause 8) sorts de-identification techniques
into statistical tools (sampling, aggregation), cryptographic tools (deterministic,
order-preserving, format-preserving and homomorphic encryption, homomorphic secret
sharing), suppression (masking, local suppression, record suppression),
pseudonymization, anatomization, generalization (rounding, top and bottom coding,
combining attributes, local generalization), randomization (noise addition,
permutation, microaggregation) and synthetic data.  The classes below were read in the
IHE De-Identification Handbook's summary of that clause (Techniques → Classification of
de-identification techniques), not in the standard's own text.

Keys: the Step 7 techniques of registry.py (``TECHNIQUES``), the direct-identifier
methods of masking.py as ``mask:<method>``, and the transformations the search and the
apply step make: ``generalization`` (global recoding by a hierarchy), ``attribute_
suppression`` (a quasi-identifier generalized to its single top value ``*``),
``record_suppression`` and ``aggregation`` (a table with complementary suppression).
`iso_20889_class(key)` is what the report prints beside each transformation.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.engine.errors import EngineInputError

SOURCE = (
    "ISO/IEC 20889:2018, clause 8 (classification of de-identification techniques), as "
    "summarised in the IHE De-Identification Handbook, Techniques → Classification of "
    "de-identification techniques"
)

STATISTICAL = "Statistical tools"
CRYPTOGRAPHIC = "Cryptographic tools"
SUPPRESSION = "Suppression techniques"
PSEUDONYMIZATION = "Pseudonymization techniques"
GENERALIZATION = "Generalization techniques"
RANDOMIZATION = "Randomization techniques"
SYNTHETIC = "Synthetic data"


@dataclass(frozen=True)
class Iso20889Class:
    category: str
    technique: str | None  # the named sub-class, None where the standard names none
    note: str = ""

    @property
    def label(self) -> str:
        """As the report prints it: "Generalization techniques — Rounding"."""
        return self.category if self.technique is None else f"{self.category} — {self.technique}"


ISO_20889: dict[str, Iso20889Class] = {
    # Quasi-identifiers: the search and the apply step.
    "generalization": Iso20889Class(
        GENERALIZATION,
        None,
        "global recoding by a hierarchy (intervals, dates, prefixes, categories): every "
        "record's value replaced by the same coarser value",
    ),
    "attribute_suppression": Iso20889Class(
        SUPPRESSION, "Masking", "a quasi-identifier generalized to its top value '*'"
    ),
    "record_suppression": Iso20889Class(SUPPRESSION, "Record suppression"),
    "aggregation": Iso20889Class(
        STATISTICAL,
        "Aggregation",
        "a frequency or magnitude table; its small cells are suppressed with complementary "
        "cells (suppression techniques — local suppression, applied to cells)",
    ),
    # Step 7 techniques (registry.TECHNIQUES).
    "local_suppression": Iso20889Class(SUPPRESSION, "Local suppression"),
    "microaggregation": Iso20889Class(RANDOMIZATION, "Microaggregation"),
    "noise": Iso20889Class(RANDOMIZATION, "Noise addition"),
    "rounding": Iso20889Class(GENERALIZATION, "Rounding"),
    "top_bottom_coding": Iso20889Class(GENERALIZATION, "Top and bottom coding"),
    "date_shift": Iso20889Class(
        RANDOMIZATION, "Noise addition", "one secret random offset per person, added to dates"
    ),
    "pram": Iso20889Class(
        RANDOMIZATION,
        None,
        "post-randomisation of categories with known probabilities; the standard names no "
        "sub-class for it",
    ),
    "rank_swap": Iso20889Class(RANDOMIZATION, "Permutation"),
    "synthetic": Iso20889Class(SYNTHETIC, None),
    # Direct identifiers (masking.MASK_METHODS).
    "mask:remove": Iso20889Class(SUPPRESSION, "Masking", "the column is removed"),
    "mask:mask": Iso20889Class(
        SUPPRESSION, "Masking", "part of the value is removed (character masking)"
    ),
    "mask:scrub": Iso20889Class(
        SUPPRESSION, "Masking", "identifiers found in free text replaced by typed placeholders"
    ),
    "mask:hmac": Iso20889Class(
        PSEUDONYMIZATION,
        "Pseudonyms derived from identifying attributes using cryptography",
        "keyed hash (HMAC-SHA-256) under a per-release secret key",
    ),
    "mask:random": Iso20889Class(
        PSEUDONYMIZATION,
        "Pseudonyms independent of identifying attributes",
        "random pseudonyms with a linking table kept apart",
    ),
    "mask:encrypt": Iso20889Class(
        CRYPTOGRAPHIC, "Deterministic encryption", "AES-SIV: equal values give equal tokens"
    ),
}


def iso_20889_class(key: str) -> Iso20889Class:
    """The class of a transformation: a technique key, ``mask:<method>`` or one of the
    search's transformations (``generalization``, ``record_suppression``, …)."""
    found = ISO_20889.get(key)
    if found is None:
        raise EngineInputError(f"no ISO/IEC 20889 class is recorded for {key!r}")
    return found


__all__ = ["ISO_20889", "SOURCE", "Iso20889Class", "iso_20889_class"]
