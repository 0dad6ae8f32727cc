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
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from apps.classification.quasi_values import (
    HIGH_SHARE,
    MEDIUM_SHARE,
    TOP_CODE_AGE,
    is_place,
    quasi_identifier_by_values,
)
from apps.classification.quasi_values import counted as _counted
from apps.classification.quasi_values import percent as _pct
from apps.classification.quasi_values import share_of as _share
from apps.datasets.profiling import (
    FREE_TEXT_MIN_DISTINCT,
    FREE_TEXT_MIN_UNIQUE_SHARE,
    ColumnProfile,
    DatasetProfile,
)
from apps.engine.freetext import SPAN_LABELS, ColumnScan, scan_series
from apps.engine.namelists import FIRST_NAMES, LAST_NAMES
from apps.engine.validators import (
    is_canadian_postal_code,
    is_email,
    is_fsa,
    is_icd10_code,
    is_ip_address,
    is_nanp_phone,
    is_ontario_health_number,
    is_plain_digits,
    is_sin,
    is_ssn,
    is_street_address,
    is_url,
    strip_accents,
)

__all__ = [
    "CONFIDENCES",
    "PUBLIC_QUASI_IDENTIFIER_LIMIT",
    "RELEASE_MODELS",
    "ROLES",
    "Suggestion",
    "classification_warnings",
    "name_tokens",
    "reclassify_note",
    "suggest_roles",
]

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


# --------------------------------------------------------------------------- names


def name_tokens(name: str) -> tuple[str, ...]:
    """'healthCardNumber' → ('health', 'card', 'number'); 'Date de naissance' → (date, de,
    naissance); 'ZIPCode' → ('zip', 'code'); accents removed, lower case."""
    text = strip_accents(name)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text)
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    text = re.sub(r"([A-Za-z])(\d)", r"\1_\2", text)
    text = re.sub(r"(\d)([A-Za-z])", r"\1_\2", text)
    return tuple(token for token in re.split(r"[^a-z0-9]+", text.lower()) if token)


@dataclass(frozen=True)
class _NameRule:
    kind: str
    role: str
    label: str
    phrases: tuple[tuple[str, ...], ...]  # token sequences; a one-token "stem*" also matches
    # the start or end of a token ("homephone", "emailaddr")
    unless: frozenset[str] = frozenset()  # tokens that cancel this rule


def _rule(kind: str, role: str, label: str, phrases: str, unless: Iterable[str] = ()) -> _NameRule:
    return _NameRule(
        kind=kind,
        role=role,
        label=label,
        phrases=tuple(tuple(p.split()) for p in phrases.split(",") if p.strip()),
        unless=frozenset(unless),
    )


# Order matters: the first matching rule wins.
_NAME_RULES: tuple[_NameRule, ...] = (
    _rule("email", "direct", "an e-mail address",
          "email*, e mail, mail, courriel*, emailaddress, adresse courriel, mel, correo*"),
    _rule("ip", "direct", "an IP address", "ip, ip address, ipaddress, ipaddr, ipv4, ipv6, adresse ip"),
    _rule("url", "direct", "a web address",
          "url, urls, uri, website*, web site, homepage, home page, web page, site web, web"),
    _rule("device", "direct", "a device identifier",
          "mac address, macaddress, mac, imei, udid, device*, serial*, no serie, numero serie, appareil"),
    _rule("online_handle", "direct", "a user name or social media handle",
          "username, user name, login, handle, twitter, instagram, facebook, social media, "
          "linkedin, pseudo"),
    _rule("sin", "direct", "a Social Insurance Number",
          "sin, nas, social insurance, assurance sociale, socialinsurance"),
    _rule("ssn", "direct", "a Social Security Number", "ssn, social security, socialsecurity"),
    _rule("health_number", "direct", "a health card number",
          "health card, healthcard*, health number, health no, health num, hcn, ohip, phn, ramq, "
          "carte sante, health insurance number, assurance maladie, hin"),
    _rule("record_number", "direct", "a record or chart number",
          "mrn, medical record, chart, chart no, chart number, dossier, patient id, patientid, "
          "patient number, patient no, hospital number, client id, clientid, member id, "
          "memberid, case id, caseid, encounter id, record id, recordid, record number, "
          "study id, participant id, participantid, subject id, subjectid, person id, personid, "
          "user id, userid"),
    _rule("plate", "direct", "a licence plate", "plate*, plaque, immatriculation"),
    _rule("vin", "direct", "a vehicle identification number",
          "vin, vehicle id, vehicle identification"),
    _rule("account", "direct", "an account or card number",
          "account*, acct, compte, credit card, creditcard, card number, carte credit, iban, "
          "bank account, transit number"),
    _rule("licence", "direct", "a licence, passport or certificate number",
          "licence*, license*, permis, passport*, passeport, certificate*, certificat"),
    _rule("biometric", "direct", "biometric data",
          "fingerprint*, biometric*, photo, photograph, photos, face, voice, retina, "
          "iris scan, empreinte, genome, dna"),
    _rule("phone", "direct", "a telephone or fax number",
          "phone*, telephone*, tel, tel no, mobile, cell, cellphone, cellulaire, fax, "
          "telecopieur, pager, telefono*, celular, movil"),
    _rule("coordinates", "direct", "exact coordinates",
          "latitude*, longitude*, lat, lon, lng, geocode*, coordinates, coord, coords, xy"),
    # Before the dates: "age_at_death" and "admission_age" are ages, not dates.
    _rule("age", "quasi", "an age",
          "age, ages, age years, age group, agegroup, age band, ageband, age cat, agecat, age yrs, "
          "edad, edades"),
    _rule("country_of_birth", "quasi", "a country or place of birth",
          "country of birth, birth country, birthplace, place of birth, pays naissance, "
          "pays de naissance, lieu naissance, lieu de naissance, birth place, cob"),
    _rule("date_of_birth", "quasi", "a date of birth",
          "dob, date of birth, birth date, birthdate*, birthday, date naissance, "
          "date de naissance, ddn, naissance, born, birth dt, dateofbirth, fecha nacimiento, "
          "fecha de nacimiento, nacimiento"),
    _rule("birth_year", "quasi", "a year of birth",
          "birth year, year of birth, yob, annee naissance, annee de naissance, birthyear"),
    _rule("event_date", "quasi", "a date of death",
          "date of death, death date, dod, deces, death, defuncion, fallecimiento"),
    _rule("length_of_stay", "quasi", "a length of stay",
          "length of stay, los, duree sejour, duree de sejour, days in hospital, lengthofstay"),
    _rule("event_date", "quasi", "an event date",
          "date, dates, dt, dte, datetime, timestamp, admitted, admit, jour, fecha, fechas"),
    _rule("event_year", "quasi", "a year tied to a person",
          "graduation year, grad year, year of graduation, immigration year, year of immigration, "
          "arrival year, annee, year"),
    _rule("sex", "quasi", "sex or gender",
          "sex, gender*, sexe, genre, sexual orientation, orientation, sexo, genero"),
    _rule("postal_code", "quasi", "a postal code",
          "postal code, postalcode, postcode, post code, zip, zipcode, zip code, code postal, "
          "codepostal, fsa, postal cd, codigo postal"),
    _rule("geography", "quasi", "a place",
          "city, ville, town, municipality, municipalite, province, prov, state, region, county, "
          "comte, district, neighbourhood, neighborhood, quartier, lhin, census, cma, csd, "
          "dissemination area, country, pays, residence, rural, urban, community, village, "
          "territory, hospital, hopital, facility, institution, clinic, clinique, school, "
          "ecole, etablissement, site, location, lieu, geography, geo, municipio*, ciudad, "
          "localidad, colonia, provincia, entidad, pais, residencia, region*, rmr, sdr",
          unless=("civil",)),
    _rule("address", "direct", "a street address",
          "address*, adresse*, street*, rue, addr, civic, apartment, apt, suite, po box, "
          "mailing, domicile, direccion*, domicilio, calle"),
    _rule("ethnicity", "quasi", "an ethnic origin or Indigenous status",
          "ethnicity, ethnic*, ethnie, origine ethnique, race, visible minority, "
          "minorite visible, aboriginal*, indigenous*, autochtone*, first nations, metis, "
          "inuit, ancestry, etnia, etnico, raza"),
    _rule("immigration", "quasi", "an immigration or citizenship status",
          "immigration*, immigrant*, citizenship, citoyennete, nationality, nationalite, "
          "refugee, landed, nacionalidad"),
    _rule("language", "quasi", "a language",
          "language*, langue*, lang, mother tongue, first language, home language, idioma, "
          "lengua*"),
    _rule("marital_status", "quasi", "a marital status",
          "marital*, matrimonial*, etat civil, civil status, married, relationship status, "
          "estado civil"),
    _rule("education", "quasi", "a level of education",
          "education*, scolarite, degree, diplome, schooling, years of school, "
          "highest level, niveau scolarite, niveau etudes, escolaridad, estudios, "
          "nivel educativo"),
    _rule("income", "quasi", "an income", "income*, revenu*, salary, salaire, wage, wages, "
          "earnings, remuneration, ingresos, salario, sueldo"),
    _rule("occupation", "quasi", "an occupation or employer",
          "occupation*, profession*, job, job title, emploi, metier, employer*, employeur, "
          "workplace, industry, noc, naics, ocupacion*, profesion*, trabajo, empleo"),
    _rule("religion", "quasi", "a religion", "religion*, religious, confession, denomination, faith"),
    _rule("household", "quasi", "a household or family composition",
          "household*, menage, children, number of children, nb enfants, enfants, family size, "
          "dependents, dependants, pregnancies, grossesses, parity, gravida"),
    _rule("criminal_history", "quasi", "a criminal history",
          "criminal*, conviction*, offence*, offense*, casier, arrest*, incarceration"),
    _rule("health_information", "sensitive", "health information",
          "diagnosis*, diagnoses, diagnostic*, dx, icd, icd 10, icd10, cim, condition*, "
          "disease*, maladie*, disorder*, medication*, medicament*, drug*, prescription*, rx, "
          "hiv, vih, aids, sida, hepatitis, test result, result, results, resultat, lab, labs, "
          "procedure*, cci, intervention*, treatment*, traitement*, therapy, mental health, "
          "psychiatric, psych, substance, overdose, opioid*, sti, std, sexual, cancer, tumour, "
          "tumor, allergy, allergies, symptom*, cause of death, disability, handicap, pregnant, "
          "abortion, genetic*, covid*, vaccin*"),
    _rule("free_text", "other", "free text",
          "note, notes, comment, comments, commentaire*, remarks, remarque*, description, "
          "narrative, text, free text, freetext, observation, observations, memo, details, "
          "summary, resume, reason, raison, history, histoire, observaciones, observacion, "
          "notas, comentario*"),
    _rule("name", "direct", "a person's name",
          "name, names, nom, noms, prenom*, surname*, firstname, lastname, fullname, givenname, "
          "apellido*, nombre completo, nombre paciente, nombre del paciente, primer nombre, "
          "segundo nombre, nombre de pila, "
          "familyname, middlename, maidenname, fname, lname, initials, initial, initiales, "
          "next of kin, nok, emergency contact, contact, mother, father, spouse, guardian",
          unless=("file", "product", "company", "organization", "organisation", "brand", "item",
                  "variable", "column", "field", "dataset", "table", "program", "project",
                  "sheet", "document", "form", "course", "team", "department", "ward",
                  "service", "vendor", "supplier", "host", "domain", "host")),
    _rule("identifier", "direct", "an identifier",
          "id, identifier, uuid, guid, no, num, number, numero, nbr, nr, key, ident"),
)  # fmt: skip


def _phrase_matches(tokens: Sequence[str], phrase: tuple[str, ...]) -> bool:
    if len(phrase) == 1 and phrase[0].endswith("*"):
        stem = phrase[0][:-1]
        return any(token.startswith(stem) or token.endswith(stem) for token in tokens)
    width = len(phrase)
    return any(tuple(tokens[i : i + width]) == phrase for i in range(len(tokens) - width + 1))


def _match_name(name: str) -> _NameRule | None:
    tokens = name_tokens(name)
    for rule in _NAME_RULES:
        if rule.unless and rule.unless.intersection(tokens):
            continue
        if any(_phrase_matches(tokens, phrase) for phrase in rule.phrases):
            return rule
    return None


# --------------------------------------------------------------------------- values

_FIRST = frozenset(strip_accents(n).lower() for n in FIRST_NAMES)
_LAST = frozenset(strip_accents(n).lower() for n in LAST_NAMES)
_NAME_WORD = re.compile(r"[^\W\d_]+(?:['-][^\W\d_]+)*")

_SEX_VALUES = frozenset(
    {"m", "f", "male", "female", "man", "woman", "men", "women", "h", "homme", "femme",
     "masculin", "feminin", "x", "other", "autre", "u", "unknown", "inconnu", "nonbinary",
     "non-binary", "non binaire", "intersex", "boy", "girl", "hombre", "mujer", "masculino",
     "femenino", "varon", "varón"}
)  # fmt: skip
_SEX_CORE = frozenset(
    {"m", "f", "male", "female", "h", "homme", "femme", "man", "woman", "hombre", "mujer",
     "masculino", "femenino"}
)  # fmt: skip


def _values(sample: pl.DataFrame, column: str) -> list[str]:
    if column not in sample.columns:
        return []
    series = sample.get_column(column).drop_nulls().head(MAX_SAMPLE_VALUES)
    if series.dtype != pl.String:
        try:
            series = series.cast(pl.String)
        except pl.exceptions.PolarsError:
            return []  # nested or binary values: judged on name and profile alone
    return [v.strip() for v in series.to_list() if v is not None and v.strip()]


def _is_person_name(value: str) -> bool:
    if any(ch.isdigit() for ch in value) or "@" in value:
        return False
    words = _NAME_WORD.findall(strip_accents(value))
    if not 1 <= len(words) <= 4:
        return False
    lowered = [w.lower() for w in words]
    if value == value.lower() and len(words) > 1:
        return False  # a lower-case phrase, not a name
    return any(w in _FIRST or w in _LAST for w in lowered)


@dataclass(frozen=True)
class _ValueCheck:
    kind: str
    role: str
    what: str  # completes "92 % of 50 sampled values ..."
    check: Callable[[str], bool]


def _formatted_ssn(value: str) -> bool:
    """SSN by value only when written AAA-GG-SSSS: nine plain digits are too ambiguous."""
    return is_ssn(value) and not is_plain_digits(value, 9)


# Ordered: the first check reaching the threshold names the column.
_VALUE_CHECKS: tuple[_ValueCheck, ...] = (
    _ValueCheck("email", "direct", "are valid e-mail addresses", is_email),
    _ValueCheck("url", "direct", "are web addresses (URLs)", is_url),
    _ValueCheck("ip", "direct", "are IP addresses", is_ip_address),
    _ValueCheck("sin", "direct", "are valid SINs (9 digits, Luhn check digit)", is_sin),
    _ValueCheck(
        "health_number",
        "direct",
        "are valid Ontario health numbers (10 digits, Luhn check digit)",
        is_ontario_health_number,
    ),
    _ValueCheck(
        "ssn", "direct", "follow the US SSN pattern (AAA-GG-SSSS, issuing rules)", _formatted_ssn
    ),
    _ValueCheck("phone", "direct", "are North American phone numbers", is_nanp_phone),
    _ValueCheck("address", "direct", "look like street addresses", is_street_address),
    _ValueCheck(
        "postal_code", "quasi", "are Canadian postal codes (A1A 1A1)", is_canadian_postal_code
    ),
    _ValueCheck("postal_code", "quasi", "are forward sortation areas (A1A)", is_fsa),
    _ValueCheck("health_information", "sensitive", "start with an ICD-10 code", is_icd10_code),
)


# --------------------------------------------------------------------------- suggestion building


@dataclass
class _Draft:
    kind: str
    role: str
    confidence: str
    evidence: list[str]
    needs_review: bool = False


def _value_match(values: Sequence[str]) -> tuple[_ValueCheck, float] | None:
    if not values:
        return None
    for check in _VALUE_CHECKS:
        share = _share(values, check.check)
        if share >= MEDIUM_SHARE:
            # Ten plain digits pass a phone check more often than a Luhn check by chance;
            # health numbers are tested first, so a phone column reaching here failed Luhn.
            return check, share
    return None


def _sex_share(values: Sequence[str]) -> float:
    distinct = {v.lower() for v in values}
    if not distinct or len(distinct) > 6 or not distinct & _SEX_CORE:
        return 0.0
    return _share(values, lambda v: v.lower() in _SEX_VALUES)


def _age_evidence(profile: ColumnProfile, values: Sequence[str]) -> list[str]:
    numbers = []
    for value in values:
        try:
            numbers.append(float(value))
        except ValueError:
            continue
    top = _as_float(profile.max)
    over = sum(1 for n in numbers if n > TOP_CODE_AGE)
    if (top is not None and top > TOP_CODE_AGE) or over:
        # Never the highest age itself: the oldest person's exact age is a quasi-identifier
        # value, and reviewers read this evidence.
        count = f"; {over} of {len(numbers)} sampled values" if numbers else ""
        return [f"ages over {TOP_CODE_AGE} present{count}: top-code at 90+ recommended"]
    return []


def _as_float(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _as_date(text: str | None) -> dt.date | None:
    if not text:
        return None
    try:
        return dt.date.fromisoformat(text[:10])
    except ValueError:
        return None


def _birth_date_evidence(profile: ColumnProfile, today: dt.date) -> list[str]:
    earliest = _as_date(profile.min)
    if earliest is None:
        return []
    age = today.year - earliest.year - ((today.month, today.day) < (earliest.month, earliest.day))
    if age > TOP_CODE_AGE:
        # The cut-off year, not the earliest date: that is one person's exact birth date.
        return [
            f"birth dates imply ages over {TOP_CODE_AGE} (people born before "
            f"{today.year - TOP_CODE_AGE}): top-code at 90+ recommended"
        ]
    return []


def _exact_date_evidence(profile: ColumnProfile) -> list[str]:
    if profile.inferred_type in ("date", "datetime"):
        return ["exact dates (to the day): generalizing to month and year is recommended"]
    return []


def _embedded_scan(values: Sequence[str]) -> ColumnScan | None:
    """What the free-text detectors find in the sampled values (None without values)."""
    if not values:
        return None
    return scan_series(pl.Series("sample", list(values), dtype=pl.String))


def _embedded_identifiers(scan: ColumnScan | None) -> list[str]:
    """Evidence, one line per kind of span, then up to three examples with the spans masked."""
    if scan is None or not scan.rows_with_spans:
        return []
    found = []
    for span_type, spans in scan.spans.items():
        rows = scan.rows_by_type.get(span_type, 0)
        found.append(
            f"{SPAN_LABELS.get(span_type, span_type.lower())} found in "
            f"{_pct(rows / scan.values)} of {scan.values} sampled texts ({spans} in all)"
        )
    found += [f"{EXAMPLE_PREFIX}“{example}”" for example in scan.examples]
    return found


# Evidence lines quoting sampled text (detected spans masked, the rest as written): shown
# only to members who may see raw values (apps.classification.selectors).
EXAMPLE_PREFIX = "example, detected spans masked: "


# Below this share of sampled values with a detected span, a column that is not free text
# (short codes, categories) is not called an identifier on the detectors' word alone: one
# category that happens to be a surname ("White", "Hamilton") must not make it one.
EMBEDDED_SHARE = 0.1


def _name_evidence(column: str, rule: _NameRule) -> str:
    return f"the column name '{column}' suggests {rule.label}"


def _postal_or_fsa(value: str) -> bool:
    return is_canadian_postal_code(value) or is_fsa(value)


# Checks that confirm (or contradict) what a column name says.
_KIND_CHECKS: dict[str, tuple[str, Callable[[str], bool]]] = {
    "email": ("are valid e-mail addresses", is_email),
    "phone": ("are North American phone numbers", is_nanp_phone),
    "sin": ("are valid SINs (9 digits, Luhn check digit)", is_sin),
    "ssn": ("follow the US SSN pattern (AAA-GG-SSSS, issuing rules)", is_ssn),
    "health_number": (
        "are valid Ontario health numbers (10 digits, Luhn check digit)",
        is_ontario_health_number,
    ),
    "ip": ("are IP addresses", is_ip_address),
    "url": ("are web addresses (URLs)", is_url),
    "address": ("look like street addresses", is_street_address),
    "postal_code": ("are Canadian postal codes or forward sortation areas", _postal_or_fsa),
    "health_information": ("start with an ICD-10 code", is_icd10_code),
    "name": ("are common first or last names", _is_person_name),
    "sex": ("are sex or gender codes", lambda v: v.lower() in _SEX_VALUES),
    "geography": ("are US states, Canadian provinces or territories, or countries", is_place),
}
# Formats strict enough that a name contradicted by the values deserves low confidence.
_STRICT_KINDS = frozenset({"email", "phone", "sin", "ssn", "health_number", "ip", "url"})


def _free_text_draft(
    profile: ColumnProfile, values: Sequence[str], rule: _NameRule | None
) -> _Draft:
    evidence = [
        f"free text: on average {profile.mean_length or 0:.0f} characters per value, "
        f"{_pct(profile.unique_share)} of values distinct"
    ]
    scan = _embedded_scan(values)
    evidence += _embedded_identifiers(scan)
    if scan is not None and scan.rows_with_spans:
        if rule is not None:
            evidence.append(_name_evidence(profile.name, rule))
        return _Draft("free_text_identifiers", "direct", "high", evidence, needs_review=True)
    if rule is not None and rule.role == "sensitive":
        evidence.append(_name_evidence(profile.name, rule))
        return _Draft("health_information", "sensitive", "medium", evidence, needs_review=True)
    if rule is not None and rule.kind == "free_text":
        evidence.append(_name_evidence(profile.name, rule))
    return _Draft("free_text", "other", "high", evidence, needs_review=True)


def _unique(profile: ColumnProfile) -> bool:
    return profile.inferred_type == "identifier_like" or (
        profile.distinct >= 10 and profile.unique_share >= 0.95
    )


def _named_draft(
    profile: ColumnProfile, values: Sequence[str], rule: _NameRule, today: dt.date
) -> _Draft:
    """The column name matched a rule: start from it, let the values confirm or contradict."""
    evidence = [_name_evidence(profile.name, rule)]
    kind, role, confidence = rule.kind, rule.role, "medium"
    if kind == "identifier":
        if not _unique(profile):
            evidence.append(f"values repeat ({profile.distinct} distinct values)")
            return _Draft("shared_code", "other", "low", evidence)
        kind = "record_number"
    if kind == "record_number" and _unique(profile):
        evidence.append(f"{_pct(profile.unique_share)} of values are distinct")
        confidence = "high"
    specific = _KIND_CHECKS.get(kind)
    if specific is not None and values:
        what, check = specific
        share = _share(values, check)
        if kind == "sex":
            share = _sex_share(values)
        if share >= MEDIUM_SHARE:
            evidence.append(_counted(share, len(values), what))
            if share >= HIGH_SHARE:
                confidence = "high"
        elif kind in _STRICT_KINDS:
            evidence.append(f"but only {_counted(share, len(values), what)}")
            confidence = "low"
            if kind == "phone" and _unique(profile):
                # The check knows North American numbers only: numbers abroad under a name
                # that says phone, unique per row, are a direct identifier all the same.
                evidence.append(f"{_pct(profile.unique_share)} of values are distinct")
                confidence = "medium"
        elif kind == "name" and share < 0.2:
            evidence.append(f"few sampled values are common names ({_pct(share)})")
    if kind in ("date_of_birth", "event_date") and profile.inferred_type in ("date", "datetime"):
        confidence = "high"
        evidence += _exact_date_evidence(profile)
    if kind == "date_of_birth":
        evidence += _birth_date_evidence(profile, today)
    if kind == "age" and profile.inferred_type in ("integer", "decimal"):
        confidence = "high"
        evidence += _age_evidence(profile, values)
    if kind == "birth_year":
        evidence += _birth_year_evidence(profile, today)
    return _Draft(kind, role, confidence, evidence)


# A category list: few different values, each held by many rows. A name or a sentence
# written about one person is not repeated that way, so the name and free-text detectors
# never read such a list, whatever its words ("White", "Rose", "Georgia", "Jordan" are
# categories there, not people).
CLOSED_MAX_DISTINCT = 50
CLOSED_MAX_UNIQUE_SHARE = 1 / 3  # three rows or more per value on average
# Prose: several words per value on average, and values that vary as the profile's
# free-text rule asks (apps.datasets.profiling).
PROSE_MIN_MEAN_WORDS = 2.0


# A coded list of long labels ("Fracture of the left knee, initial encounter…") is free text by
# its length alone; what tells it from text written about one person is that its labels
# repeat: at least this share of the sampled values occur more than once in the sample.
# Notes that repeat a few stock phrases stay text (the rest is written for one person).
LIST_MIN_REPEATED_SHARE = 0.8
LIST_MIN_SAMPLE = 50


def _closed_vocabulary(profile: ColumnProfile) -> bool:
    return (
        0 < profile.distinct <= CLOSED_MAX_DISTINCT
        and profile.unique_share <= CLOSED_MAX_UNIQUE_SHARE
    )


def _repeated_labels(values: Sequence[str]) -> bool:
    if len(values) < LIST_MIN_SAMPLE:
        return False
    counts = Counter(values)
    repeated = sum(1 for v in values if counts[v] > 1)
    return repeated >= LIST_MIN_REPEATED_SHARE * len(values)


def _a_list(profile: ColumnProfile, values: Sequence[str]) -> bool:
    """A category list, which the name and free-text detectors never read."""
    return _closed_vocabulary(profile) or _repeated_labels(values)


def _looks_like_prose(profile: ColumnProfile, values: Sequence[str]) -> bool:
    if not values or _a_list(profile, values):
        return False
    if profile.inferred_type == "free_text":
        return True
    words = sum(len(_NAME_WORD.findall(v)) for v in values) / len(values)
    varied = (
        profile.unique_share >= FREE_TEXT_MIN_UNIQUE_SHARE
        or profile.distinct >= FREE_TEXT_MIN_DISTINCT
    )
    return words >= PROSE_MIN_MEAN_WORDS and varied


def _names_by_value(profile: ColumnProfile, values: Sequence[str]) -> _Draft | None:
    """A column of people's names: most rows AND most of the different values are names, and
    the values are not a category list."""
    if profile.inferred_type not in ("categorical", "identifier_like") or not values:
        return None
    if _closed_vocabulary(profile):
        return None
    rows = _share(values, _is_person_name)
    distinct = sorted(set(values))
    different = _share(distinct, _is_person_name)
    if rows < MEDIUM_SHARE or different < MEDIUM_SHARE:
        return None
    evidence = [
        _counted(rows, len(values), "are common first or last names"),
        f"{_pct(different)} of the {len(distinct)} different values are names",
    ]
    return _Draft("name", "direct", "high" if rows >= HIGH_SHARE else "medium", evidence)


def _quasi_by_values(
    profile: ColumnProfile, values: Sequence[str], today: dt.date
) -> _Draft | None:
    if not values or _numbered(values):
        return None
    found = quasi_identifier_by_values(
        values, numeric=profile.inferred_type in ("integer", "decimal"), today=today
    )
    if found is None:
        return None
    evidence = list(found.evidence)
    if _unique(profile):
        # Places and dates of a small data set can be unique per row: still what they are,
        # a quasi-identifier, to be generalized until the classes are large enough.
        evidence.append(
            f"{_pct(profile.unique_share)} of the values are distinct: near-unique per row, "
            "so it must be generalized"
        )
    return _Draft(found.kind, "quasi", found.confidence, evidence)


# What an intruder can know of anyone, whatever the column is about: the dates and places
# of their life, the words of a calendar, postal codes, years. Such values outrank a name that
# says "sensitive" (a date of onset is an event date). Whole numbers in the range of ages,
# months or days do not: under a health name they are more likely measurements or scores.
_KNOWABLE_KINDS = frozenset(
    {"event_date", "year_month", "weekday", "geography", "postal_code", "year"}
)


def _knowable(found: _Draft, profile: ColumnProfile) -> bool:
    numeric = profile.inferred_type in ("integer", "decimal")
    return found.kind in _KNOWABLE_KINDS or (found.kind == "month" and not numeric)


def _numbered(values: Sequence[str]) -> bool:
    """Numbers given to records in turn ("00017", "00018"…): the different values fill
    nearly all of their range, which places, dates and ages spread over a wide one do not."""
    digits = {int(v) for v in values if v.isdigit()}
    if len(digits) < 10 or len(digits) < 0.9 * len(values):
        return False
    return len(digits) >= 0.9 * (max(digits) - min(digits) + 1)


def _draft_for(profile: ColumnProfile, values: Sequence[str], today: dt.date) -> _Draft:
    """The decision list, read top to bottom."""
    if profile.inferred_type == "empty":
        return _Draft("empty", "other", "high", ["the column has no values"])
    rule = _match_name(profile.name)
    prose = _looks_like_prose(profile, values)

    # 1. Free text: a person must read it, whatever else the name suggests.
    if profile.inferred_type == "free_text" and not _a_list(profile, values):
        return _free_text_draft(profile, values, rule)

    # 2. Values that are direct identifiers decide, whatever the name says.
    matched = _value_match(values)
    if matched is not None and matched[0].role == "direct":
        check, share = matched
        evidence = [_counted(share, len(values), check.what)]
        agrees = rule is not None and rule.kind == check.kind
        if agrees and rule is not None:
            evidence.append(_name_evidence(profile.name, rule))
        confidence = "high" if share >= HIGH_SHARE or agrees else "medium"
        return _Draft(check.kind, "direct", confidence, evidence)

    # 3. The name, confirmed or contradicted by the values; a name that points nowhere
    #    ("batch_no" whose codes repeat) gives way to values that are quasi-identifiers, and
    #    a name that says sensitive ("symptom_onset") to values anyone can know.
    if rule is not None and rule.kind != "free_text":
        named = _named_draft(profile, values, rule, today)
        if named.role in ("other", "sensitive"):
            by_values = _quasi_by_values(profile, values, today)
            if by_values is None and matched is not None and matched[0].role == "quasi":
                check, share = matched
                by_values = _Draft(
                    check.kind, "quasi", "high" if share >= HIGH_SHARE else "medium",
                    [_counted(share, len(values), check.what)],
                )  # fmt: skip
            if by_values is not None and (named.role == "other" or _knowable(by_values, profile)):
                by_values.evidence.append(_name_evidence(profile.name, rule))
                return by_values
        return named

    # 4. Values alone: names, quasi-identifiers, health information.
    names = _names_by_value(profile, values)
    if names is not None:
        return names
    if matched is not None:
        check, share = matched
        evidence = [_counted(share, len(values), check.what)]
        return _Draft(check.kind, check.role, "high" if share >= HIGH_SHARE else "medium", evidence)
    sex_share = _sex_share(values)
    if sex_share >= HIGH_SHARE:
        return _Draft(
            "sex", "quasi", "medium", [_counted(sex_share, len(values), "are sex or gender codes")]
        )
    by_values = _quasi_by_values(profile, values, today)
    if profile.inferred_type in ("date", "datetime"):
        # The profile found dates in 95 % of the values or more: a date column, surely.
        counted = by_values.evidence[:1] if by_values and by_values.kind == "event_date" else []
        evidence = ["values are dates", *counted, *_exact_date_evidence(profile)]
        return _Draft("event_date", "quasi", "high", evidence)
    if by_values is not None:
        return by_values

    # 5. Unique per row: a record number of some kind.
    if _unique(profile):
        evidence = [
            f"{_pct(profile.unique_share)} of the non-missing values are distinct "
            f"({profile.distinct} values): near-unique per row"
        ]
        return _Draft("unique_values", "direct", "medium", evidence)

    # 6. Text that is not long enough to be called free text may still carry identifiers,
    #    if it reads as prose: a category list is never scanned.
    scan = _embedded_scan(values) if prose else None
    if scan is not None and scan.share >= EMBEDDED_SHARE:
        return _Draft(
            "free_text_identifiers", "direct", "medium", _embedded_identifiers(scan),
            needs_review=True,
        )  # fmt: skip
    return _Draft("other", "other", "low", ["no identifying pattern in the name or the values"])


def _birth_year_evidence(profile: ColumnProfile, today: dt.date) -> list[str]:
    earliest = _as_float(profile.min)
    if earliest is not None and today.year - earliest > TOP_CODE_AGE:
        return [f"years of birth imply ages over {TOP_CODE_AGE}: top-code at 90+ recommended"]
    return []


def suggest_roles(
    profile: DatasetProfile, sample: pl.DataFrame, *, today: dt.date | None = None
) -> list[Suggestion]:
    """One suggestion per profiled column, in column order.

    `sample` holds some rows of the data set (a few hundred to a few thousand is plenty);
    columns missing from it are judged on their name and profile alone. `today` (default:
    the current date) is used to turn birth dates into ages.
    """
    on = today or dt.date.today()
    suggestions = []
    for column in profile.columns:
        values = _values(sample, column.name)
        draft = _draft_for(column, values, on)
        suggestions.append(
            Suggestion(
                column=column.name,
                role=draft.role,
                reason=_R.get(draft.kind, _R["other"]),
                confidence=draft.confidence,
                needs_review=draft.needs_review,
                evidence=tuple(draft.evidence),
                kind=draft.kind,
            )
        )
    return suggestions


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
