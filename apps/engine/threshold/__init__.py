"""Risk threshold (Step 3): invasion of privacy → threshold, by jurisdiction profile.

Profiles and presets are data files (``data/profiles/*.json``, ``data/presets/*.json``),
each with its edition, its source and the section the values come from, the release
models they apply to and the risk measure each bounds (maximum, average or strict
average risk).  One loader (profiles.py) reads and validates them at import, so a new
edition — the IPC's 12-step guidelines of October 2025, once its tables can be read — is
added as a file, without code changes.  A profile whose primary text could not be
obtained is kept with ``"offered": false``: it is listed in `WITHHELD` with its reason,
never offered, and refused by `get_profile`.

Offered today: Ontario IPC 2016 (the default), Singapore PDPC 2018, El Emam 2013, EMA
Policy 0070 / Health Canada public release of clinical reports (0.09 on the maximum risk,
public release only) and ISO/IEC 27559:2022 as tabled in the IHE De-Identification
Handbook (maximum risk 0.1 / 0.075 / 0.05 by impact for public release; average risk at
the same values for non-public release).

API for the wizard (Steps 3 and 6, the report):

    PROFILES, PRESETS, WITHHELD         offered profiles (key → data), presets, withheld
    get_profile(key) -> Profile         validated view: thresholds, release_models
                                        (ThresholdRule: measure, values, source), edition,
                                        source, read_from, T1 table (context.py)
    threshold_for(level, profile, *, release_model=None) -> RiskThreshold
                                        value, source, measure (with a release model)
    preset_threshold(key), custom_threshold(value, justification) -> RiskThreshold
    release_threshold(chosen, *, profile, rows, justification) -> ReleaseThreshold
    invasion_of_privacy(answers) -> InvasionOfPrivacyAssessment   (questionnaire.py)
    register_profile(key, data)         add a profile at run time (tests, a custom table)

A profile's measure ``average`` is the source's word; the product applies every average
as METHOD step 4's strict average (average risk with the maximum-risk cap), since the
sources that allow average risk also ask for protection against outlying classes (IPC
2016 step 4.2; the IHE handbook's table, "provided there are also safeguards against
high-risk outlier groups").
"""

from apps.engine.threshold.choice import (
    MAX_RELEASE_THRESHOLD,
    MIN_JUSTIFICATION_WORDS,
    ReleaseThreshold,
    RiskThreshold,
    custom_threshold,
    is_a_sentence,
    preset_threshold,
    profile_range,
    release_threshold,
    threshold_for,
)
from apps.engine.threshold.profiles import (
    DATA_DIR,
    DEFAULT_PROFILE,
    GRADINGS,
    LEVELS,
    MEASURES,
    PRESETS,
    PRODUCT_MEASURES,
    PROFILES,
    RELEASE_MODELS,
    WITHHELD,
    Profile,
    ThresholdRule,
    WithheldProfile,
    get_profile,
    load_directory,
    preset_from_data,
    profile_from_data,
    register_profile,
    withheld_from_data,
)
from apps.engine.threshold.questionnaire import (
    INVASION_FACTORS,
    INVASION_RULE,
    FactorScore,
    InvasionOfPrivacyAssessment,
    invasion_of_privacy,
)

__all__ = [
    "DATA_DIR",
    "DEFAULT_PROFILE",
    "GRADINGS",
    "INVASION_FACTORS",
    "INVASION_RULE",
    "LEVELS",
    "MAX_RELEASE_THRESHOLD",
    "MEASURES",
    "MIN_JUSTIFICATION_WORDS",
    "PRESETS",
    "PRODUCT_MEASURES",
    "PROFILES",
    "RELEASE_MODELS",
    "WITHHELD",
    "FactorScore",
    "InvasionOfPrivacyAssessment",
    "Profile",
    "ReleaseThreshold",
    "RiskThreshold",
    "ThresholdRule",
    "WithheldProfile",
    "custom_threshold",
    "get_profile",
    "invasion_of_privacy",
    "is_a_sentence",
    "load_directory",
    "preset_from_data",
    "preset_threshold",
    "profile_from_data",
    "profile_range",
    "register_profile",
    "release_threshold",
    "threshold_for",
    "withheld_from_data",
]
