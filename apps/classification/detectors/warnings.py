"""Warnings over a whole classification: too many quasi-identifiers for a public release,
released identifiers, columns to read (:func:`classification_warnings`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from apps.classification.detectors.reasons import (
    PUBLIC_QUASI_IDENTIFIER_LIMIT,
    RELEASE_MODELS,
    ROLES,
)

# --------------------------------------------------------------------------- warnings


def reclassify_note(column: str) -> str:
    """What to tell the user about a direct identifier that the analysis needs (IPC Step 2)."""
    return (
        f"'{column}' is a direct identifier, but it is marked as needed for the analysis. "
        "The guidelines ask that such a variable be classified as a quasi-identifier instead, "
        "so that it is generalized (for example a postal code cut to its first three "
        "characters) and counted in the risk measurement, rather than released as is "
        "(IPC Step 2)."
    )


def classification_warnings(
    roles: Mapping[str, str],
    *,
    release_model: str | None,
    keep_for_analysis: Collection[str] = frozenset(),
    needs_review: Collection[str] = frozenset(),
) -> list[str]:
    """Warnings about a classification as a whole (roles: column → role; "" = not yet
    classified, ignored).

    - a public release with more than 8 quasi-identifiers (El Emam, open-data protocol);
    - no quasi-identifier at all (the risk cannot be measured);
    - a direct identifier marked "keep for analysis" must become a quasi-identifier;
    - free-text columns that stay in the release must be read by a person (Portage).
    """
    unknown = sorted({role for role in roles.values() if role and role not in ROLES})
    if unknown:
        raise ValueError(f"unknown role(s): {', '.join(unknown)}; use one of {', '.join(ROLES)}")
    if release_model is not None and release_model not in RELEASE_MODELS:
        raise ValueError(
            f"unknown release model {release_model!r}; use one of {', '.join(RELEASE_MODELS)}"
        )
    warnings: list[str] = []
    classified = {name: role for name, role in roles.items() if role}
    quasi = [name for name, role in classified.items() if role == "quasi"]
    if release_model == "public" and len(quasi) > PUBLIC_QUASI_IDENTIFIER_LIMIT:
        warnings.append(
            f"This public release has {len(quasi)} quasi-identifiers. With more than "
            f"{PUBLIC_QUASI_IDENTIFIER_LIMIT}, a public data set can rarely be made low-risk "
            "without destroying its usefulness (El Emam, open-data protocol): drop or combine "
            "some of them, or choose a semi-public or non-public release where controls can "
            "be imposed."
        )
    if classified and not quasi:
        warnings.append(
            "No column is classified as a quasi-identifier, so there is nothing to measure "
            "the re-identification risk on. Check again: dates, ages, places, sex and similar "
            "variables are quasi-identifiers if anyone could know them."
        )
    for name in sorted(keep_for_analysis):
        if roles.get(name) == "direct":
            warnings.append(reclassify_note(name))
    for name in sorted(needs_review):
        if roles.get(name, "other") != "direct":
            warnings.append(
                f"'{name}' looks like free text. A person must read it and remove what could "
                "identify someone (names, dates, places, numbers) before release, or it "
                "should be left out (Portage)."
            )
    return warnings
