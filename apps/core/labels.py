"""The words a person reads for the product's internal keys (never the keys themselves)."""

RELEASE_MODEL_LABELS = {
    "public": "public",
    "semi_public": "semi-public",
    "non_public": "non-public",
}

MASKING_SHORT_LABELS = {
    "remove": "removed",
    "hmac": "keyed pseudonym",
    "random": "random pseudonym",
    "encrypt": "encrypted",
    "mask": "character masking",
    "scrub": "scrubbed (detected spans replaced)",
}

METRIC_LABELS = {
    "loss": "Loss (Iyengar 2002)",
    "entropy": "Non-uniform entropy (El Emam et al. 2009)",
    "precision": "Precision (Sweeney)",
    "discernibility": "Discernibility",
    "aecs": "Average equivalence class size",
}
