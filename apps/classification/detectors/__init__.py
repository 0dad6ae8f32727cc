"""Step 2 suggestions: a role for every column, with the reasons and the evidence behind it.

A suggestion is only a starting point; a person confirms every role (IPC Step 2). Evidence
comes from two places:

- the column name, in English, French or Spanish, snake_case, camelCase or abbreviated
  ("DOB", "code_postal", "healthCardNumber"), matched against ordered rules: the first rule
  that matches wins, so "email_address" is an e-mail and not a street address, and
  "drug_name" a medication and not a person's name;
- the values: a sample of rows checked for e-mail addresses, phone numbers, SINs and
  health numbers (with their check digits), postal codes, names, sex codes, ICD-10 codes,
  and the column profile (dates, free text, values unique per row);
- the shape of the values whatever the name (``v3``, ``ideathmon``): dates, months and
  weekdays, days of the month, years, ages, US states, Canadian provinces, countries and
  ZIP codes are quasi-identifiers (:mod:`apps.classification.quasi_values`);
- a category list (few different values, each held by many rows, or long labels that repeat
  from row to row) is never read by the name and free-text detectors: "White", "Rose",
  "Jordan" or "Crohn's disease" there are categories, not people.

Values decide over names when they clearly show a direct identifier. Confidence:
high when at least 85 % of the sampled values pass a check (or a name and the values agree),
medium for a name alone or a weaker match (60–85 %), low when nothing points anywhere or the
values contradict the name. Only high and medium suggestions can be confirmed without a reason
a person types (bulk accept, `Variable.confident_suggestion`): "nothing recognized" is not
evidence that a column is harmless.

Sources: IPC *De-identification Guidelines for Structured Data* (2016), Step 2 (lists of
direct and quasi-identifiers); Portage *De-identification Guidance* (2020): exact dates and
ages over 89 identifying, free text to be read by a person; El Emam, *A de-identification
protocol for open data*: no more than about 8 quasi-identifiers in a public release.

By concern: :mod:`.reasons` (roles, :class:`Suggestion`, the reason per kind), :mod:`.names`
(the name rules), :mod:`.values` (the value checks and evidence), :mod:`.suggest` (a
suggestion per column) and :mod:`.warnings` (warnings over a whole classification).
"""

from apps.classification.detectors.names import name_tokens
from apps.classification.detectors.reasons import (
    CONFIDENCES,
    PUBLIC_QUASI_IDENTIFIER_LIMIT,
    RELEASE_MODELS,
    ROLES,
    Suggestion,
)
from apps.classification.detectors.suggest import (
    CLOSED_MAX_DISTINCT,
    CLOSED_MAX_UNIQUE_SHARE,
    suggest_roles,
)
from apps.classification.detectors.values import EXAMPLE_PREFIX
from apps.classification.detectors.warnings import classification_warnings, reclassify_note

__all__ = [
    "CLOSED_MAX_DISTINCT",
    "CLOSED_MAX_UNIQUE_SHARE",
    "CONFIDENCES",
    "EXAMPLE_PREFIX",
    "PUBLIC_QUASI_IDENTIFIER_LIMIT",
    "RELEASE_MODELS",
    "ROLES",
    "Suggestion",
    "classification_warnings",
    "name_tokens",
    "reclassify_note",
    "suggest_roles",
]
