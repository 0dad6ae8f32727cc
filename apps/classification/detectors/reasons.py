"""What a suggestion is (:class:`Suggestion`), the roles, confidences and release models, and
the reason shown for each kind of variable (``_R``).
"""

from __future__ import annotations

from dataclasses import dataclass

ROLES = ("direct", "quasi", "sensitive", "other")
CONFIDENCES = ("high", "medium", "low")
RELEASE_MODELS = ("public", "semi_public", "non_public")
PUBLIC_QUASI_IDENTIFIER_LIMIT = 8  # El Emam, open-data protocol: "six to eight" at most
MAX_SAMPLE_VALUES = 1000


@dataclass(frozen=True)
class Suggestion:
    column: str
    role: str  # direct | quasi | sensitive | other
    reason: str
    confidence: str  # high | medium | low
    needs_review: bool
    evidence: tuple[str, ...]
    # What kind of variable this is ("email", "date_of_birth", "age", "postal_code", ...):
    # lets Step 7 offer the right default (remove, top-code at 90+, month/year, FSA).
    kind: str = ""


# --------------------------------------------------------------------------- reasons

_R = {
    "name": "Names and initials point to a person directly (IPC Step 2; Portage). Remove "
    "the column or replace it with a pseudonym (Step 7.1).",
    "email": "An e-mail address leads to one person: a direct identifier (IPC Step 2). "
    "Remove it or replace it with a pseudonym.",
    "phone": "A telephone or fax number reaches one person or household: a direct "
    "identifier (IPC Step 2).",
    "address": "A street address locates one household: a direct identifier (IPC Step 2; "
    "Portage lists addresses and small-area geography).",
    "sin": "A Social Insurance Number belongs to one person: a direct identifier (IPC Step 2).",
    "ssn": "A US Social Security Number belongs to one person: a direct identifier.",
    "health_number": "A health card number belongs to one person: a direct identifier "
    "(IPC Step 2).",
    "record_number": "A record, chart or patient number links each row back to the source "
    "system: a direct identifier (IPC Step 2). If rows must stay linkable, replace it with a "
    "new pseudonym (Step 7.1).",
    "account": "Account and card numbers belong to one person: direct identifiers (IPC Step "
    "2; Portage).",
    "licence": "Licence, permit, passport and certificate numbers belong to one person: "
    "direct identifiers (IPC Step 2; Portage).",
    "plate": "A licence plate number leads to a vehicle's owner: a direct identifier (IPC Step 2).",
    "vin": "A vehicle identification number leads to a vehicle's owner: a direct "
    "identifier (IPC Step 2).",
    "device": "Device identifiers and serial numbers lead to the person who uses the "
    "device: direct identifiers (IPC Step 2).",
    "ip": "An IP address can be traced to a subscriber: a direct identifier (IPC Step 2).",
    "url": "A web address can point to a personal page or profile: a direct identifier "
    "(IPC Step 2).",
    "online_handle": "User names and social media handles point to one person online: "
    "direct identifiers (Portage).",
    "biometric": "Biometric data (photographs, fingerprints, voice, genome) identifies a "
    "person directly (IPC Step 2; Portage).",
    "coordinates": "Exact coordinates can place a person at their home, like a street "
    "address: treat them as a direct identifier, or round them heavily and reclassify as a "
    "quasi-identifier if the analysis needs location.",
    "date_of_birth": "Date of birth is a quasi-identifier (IPC Step 2). Portage treats exact "
    "dates as identifying: generalize to month and year, year, or an age band.",
    "birth_year": "Year of birth reveals age, a quasi-identifier (IPC Step 2).",
    "event_date": "Dates of events such as admission, discharge, visits or death are "
    "quasi-identifiers (IPC Step 2). Portage treats exact dates as identifying: generalize to "
    "month and year.",
    "event_year": "A year tied to a person (graduation, immigration, an event) can reveal age "
    "or another quasi-identifier, so it is one too (IPC Step 2).",
    "year": "A year tied to a person (of birth, of an event) can reveal age or when something "
    "happened to them: a quasi-identifier (IPC Step 2).",
    "year_month": "A month and year of an event is a date generalized to the month, as Portage "
    "recommends for exact dates; it is still a quasi-identifier (IPC Step 2).",
    "month": "The month of a birth, a death or another event is part of its date: with a year "
    "or a day, even in another column, it narrows down who the person is. A quasi-identifier "
    "(IPC Step 2, dates).",
    "day_of_month": "A day of the month is part of an exact date: with the month and year, even "
    "in other columns, it gives the exact date, which Portage treats as identifying. A "
    "quasi-identifier (IPC Step 2, dates).",
    "weekday": "The day of the week of an event is part of its date: with other dates it narrows "
    "down when it happened. A quasi-identifier (IPC Step 2, dates).",
    "age": "Age is a quasi-identifier (IPC Step 2). Portage treats ages over 89 as "
    "identifying: top-code them at 90+.",
    "sex": "Sex, gender and sexual orientation are quasi-identifiers (IPC Step 2; Portage).",
    "postal_code": "Postal codes are quasi-identifiers (IPC Step 2). A full six-character "
    "code covers only a few households, which Portage treats as identifying: keep at most the "
    "first three characters (the forward sortation area).",
    "geography": "Where a person lives, was born or was treated is a quasi-identifier (IPC "
    "Step 2; Portage).",
    "country_of_birth": "Country or place of birth is a quasi-identifier (IPC Step 2).",
    "ethnicity": "Ethnic origin, visible-minority and Indigenous status are "
    "quasi-identifiers (IPC Step 2; Portage).",
    "immigration": "Immigration status and citizenship are quasi-identifiers (Portage).",
    "language": "Languages spoken are quasi-identifiers (IPC Step 2).",
    "marital_status": "Marital status is a quasi-identifier (IPC Step 2).",
    "education": "Level of education and years of schooling are quasi-identifiers (IPC Step 2).",
    "income": "Income is a quasi-identifier (IPC Step 2).",
    "occupation": "Profession, occupation and place of work are quasi-identifiers (IPC "
    "Step 2; Portage).",
    "religion": "Religious denomination is a quasi-identifier (IPC Step 2).",
    "household": "Household and family composition (children, pregnancies, household size) "
    "are quasi-identifiers (Portage).",
    "criminal_history": "Criminal history can be matched to public court records: a "
    "quasi-identifier (IPC Step 2; Portage).",
    "length_of_stay": "Length of stay can be known to family and neighbours and, with one "
    "event date, gives away the other: treat it as a quasi-identifier (IPC Step 2, variables "
    "that predict a quasi-identifier).",
    "health_information": "Health information (diagnoses, treatments, medications, test "
    "results) is sensitive: it is not how a person is found, but its disclosure can harm "
    "them, so it is checked for attribute disclosure. A rare or permanent condition that "
    "others could know acts as a quasi-identifier (Portage): reclassify it if so.",
    "free_text_identifiers": "This free text holds identifiers the detectors recognized "
    "(names, telephone numbers, exact dates or ages…), so it counts as a direct identifier "
    "(IPC Step 2). Step 7 leaves it out of the release by default, or replaces each detected "
    "span by a placeholder such as [NAME] or [PHONE]. No detector finds everything: whatever "
    "is released still needs a person's reading (Portage, qualitative data).",
    "free_text": "Free text can hold names, dates, places and other identifiers anywhere in a "
    "sentence, and no automatic check can clear it. A person must read it and edit it, or "
    "it should be left out of the release (Portage, qualitative data).",
    "unique_values": "Values are unique, or nearly, from row to row: the column works as a "
    "record number that can link back to the source, so treat it as a direct identifier "
    "(IPC Step 2).",
    "shared_code": "A code that several rows share (for example a site or provider number) "
    "is not a direct identifier, but check whether it reveals where or by whom people were "
    "treated; if so, it is a quasi-identifier.",
    "other": "No identifying pattern was found in the column name or its values. Confirm: "
    "anything an adversary could know about a person is a quasi-identifier (IPC Step 2).",
    "empty": "The column holds no values; it identifies no one. Consider leaving it out.",
}
