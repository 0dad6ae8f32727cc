"""Evidence from the column name: its tokens in any case style, and the ordered name rules in
English, French and Spanish (the first rule that matches wins).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from apps.engine.validators import (
    strip_accents,
)

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
