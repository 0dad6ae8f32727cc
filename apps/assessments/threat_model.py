"""The threat model of a release: who receives it, what an adversary there already knows,
whether they know their target is in the data, and who can turn pseudonyms back (issue 28).

Recorded in two steps, in one JSON field (``Assessment.threat_model``):

* Step 1 — the **recipients**, one by one: the Court of Justice held in C-413/23 P
  (EDPS v SRB, 4 September 2025) that whether data identify someone is judged from the
  side of the one who receives them, so each recipient is named; and the
  **pseudonymisation domain** of EDPB Guidelines 01/2025 (section 3): who can link a
  pseudonym back to a person, and where the key (or linking table) is kept.
* Step 5 — the **adversary's known columns**, prefilled with the quasi-identifiers of
  Step 2 (IPC 2016 step 2 counts as a quasi-identifier any column an adversary could know),
  and whether the adversary **knows the target is in the data** (prosecutor risk) or not
  (journalist risk; El Emam & Arbuckle ch. 2; IPC 2016 step 4 measures the former).

`threat_model_of` fills in what was not given (recipients from Step 1's organization,
known columns from Step 2) so the pages, the API, the snapshot and the report read one shape.
"""

from __future__ import annotations

from typing import Any

from apps.core.errors import ApplicationError

TARGET_IN_SAMPLE = {
    "known": "The adversary knows the person they look for is in the data (prosecutor risk).",
    "not_known": "The adversary does not know whether the person is in the data (journalist risk).",
}
MAX_RECIPIENTS = 50
MAX_NAME = 200
MAX_DOMAIN_TEXT = 500
# Masking methods whose output can be turned back into the identifier by whoever holds
# the key or the linking table (apps.assessments.deidentify's methods).
# hmac: keyed pseudonyms (the key links them back); random: pseudonyms with a linking table;
# encrypt: ciphertext the key decrypts.
REVERSIBLE_MASKING = ("hmac", "random", "encrypt")


#: Where a named domain's key is kept, unless Step 1 says otherwise.
DOMAIN_KEY_KEPT = (
    "In deidweb, sealed under the master key: one key shared by every release of the "
    "pseudonymisation domain '{name}'"
)

#: Step 1's threat-model fields, after the release fields (``models.RELEASE_FIELDS``) on the
#: page, in the API and in its answer.
STEP1_FIELDS = ("recipients", "pseudonym_linkers", "pseudonym_key_kept")


def clean_recipients(names: list[str] | str | None) -> list[str]:
    """One name per entry (or per line of a text), blanks dropped, duplicates dropped."""
    if names is None:
        return []
    items = names.splitlines() if isinstance(names, str) else list(names)
    out: list[str] = []
    seen: set[str] = set()
    for raw in items:
        name = str(raw).strip()
        if not name or name.lower() in seen:
            continue
        if len(name) > MAX_NAME:
            raise ApplicationError(
                f"A recipient's name is at most {MAX_NAME} characters; "
                f"“{name[:40]}…” is {len(name)}.",
                {"field": "recipients"},
            )
        seen.add(name.lower())
        out.append(name)
    if len(out) > MAX_RECIPIENTS:
        raise ApplicationError(
            f"At most {MAX_RECIPIENTS} recipients are named in one release; group the others "
            "under their organization.",
            {"field": "recipients"},
        )
    return out


def step1_part(
    *, recipients: list[str] | str | None, who_can_link: str, key_kept: str
) -> dict[str, Any]:
    for field, text in (("pseudonym_linkers", who_can_link), ("pseudonym_key_kept", key_kept)):
        if len(text.strip()) > MAX_DOMAIN_TEXT:
            raise ApplicationError(
                f"Keep the pseudonymisation domain to {MAX_DOMAIN_TEXT} characters a field.",
                {"field": field},
            )
    return {
        "recipients": clean_recipients(recipients),
        "pseudonymisation": {"who_can_link": who_can_link.strip(), "key_kept": key_kept.strip()},
    }


def step5_part(
    *, columns: list[str], known_columns: list[str] | None, target_in_sample: str
) -> dict[str, Any]:
    if target_in_sample not in TARGET_IN_SAMPLE:
        raise ApplicationError(
            f"'{target_in_sample}' is not an answer: say whether the adversary knows the target "
            "is in the data (known) or not (not_known).",
            {"field": "target_in_sample"},
        )
    part: dict[str, Any] = {"target_in_sample": target_in_sample}
    if known_columns is not None:
        unknown = [c for c in known_columns if c not in columns]
        if unknown:
            raise ApplicationError(
                f"The data set has no column {', '.join(repr(c) for c in unknown[:5])}.",
                {"field": "known_columns"},
            )
        part["known_columns"] = [c for c in columns if c in set(known_columns)]
    return part


def threat_model_of(
    assessment: Any, *, quasi: list[str], masking: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The threat model with its defaults filled in, and what the record should warn about.

    ``quasi``: the quasi-identifiers of Step 2 (the known columns' default); ``masking``:
    Step 7's masking, to tell whether any column is pseudonymised (the domain then matters).
    """
    stored = dict(assessment.threat_model or {})
    recipients = list(stored.get("recipients") or [])
    named = bool(recipients)
    if not recipients and assessment.recipient_organization:
        recipients = [assessment.recipient_organization]
    known = stored.get("known_columns")
    prefilled = known is None
    known = list(quasi) if known is None else list(known)
    pseudonymisation = dict(stored.get("pseudonymisation") or {})
    # The named domain chosen in Step 1 (apps.assessments.domains), when one is: its
    # releases share one key. Its description says who can link unless Step 1 did.
    chosen = getattr(assessment, "pseudonym_domain", None)
    domain = (
        None
        if chosen is None
        else {"id": str(chosen.id), "name": chosen.name, "description": chosen.description}
    )
    reversible = sorted(
        column
        for column, spec in (masking or {}).items()
        if (spec or {}).get("method") in REVERSIBLE_MASKING
    )
    target = stored.get("target_in_sample") or "known"
    return {
        "recipients": recipients,
        "recipients_named": named,
        "anyone": assessment.effective_release_model == "public" and not recipients,
        "known_columns": known,
        "known_columns_prefilled": prefilled,
        "known_not_quasi": [c for c in known if c not in quasi],
        "quasi_not_known": [c for c in quasi if c not in known],
        "target_in_sample": target,
        "target_in_sample_text": TARGET_IN_SAMPLE[target],
        "pseudonymisation": {
            "who_can_link": pseudonymisation.get("who_can_link", "")
            or (domain["description"] if domain else ""),
            "key_kept": pseudonymisation.get("key_kept", "")
            or (DOMAIN_KEY_KEPT.format(name=domain["name"]) if domain else ""),
            "domain": domain,
        },
        "pseudonymised_columns": reversible,
    }


def threat_model_blockers(model: dict[str, Any]) -> list[str]:
    """What the threat model lacks before a submission: a pseudonymised column with no
    declared domain (EDPB 01/2025: the domain and where the secret is kept are stated)."""
    blockers = []
    domain = model["pseudonymisation"]
    if model["pseudonymised_columns"] and not (domain["who_can_link"] and domain["key_kept"]):
        blockers.append(
            "Step 1: "
            + ", ".join(model["pseudonymised_columns"])
            + " is pseudonymised or encrypted: declare the pseudonymisation domain (who can "
            "link the pseudonyms back, and where the key is kept)."
        )
    return blockers
