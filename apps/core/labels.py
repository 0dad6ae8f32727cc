"""The words a person reads for the product's internal keys: one table for pages, the PDF,
e-mails and the API's display fields (never the keys themselves).

Every family of keys the code keeps (a model's choices, the job kinds, the questionnaires'
questions, the masking methods, …) has its labels here, under the family's name in
``LABELS``; models take their choices' labels from it, templates use the ``label`` filter
(``{{ job.kind|label:"job_kind" }}``) and Python code ``label_for(family, key)``. Families the
engine already names in its own words (techniques, span types, threshold profiles, presets,
population models) are read from the engine, so they too are looked up here.

``tests/core/test_no_internal_keys.py`` collects the keys from the code itself and fails when
one has no label here or shows up raw on a page, in the report or in an e-mail.
"""

from __future__ import annotations

from collections.abc import Mapping

from apps.engine.freetext import SPAN_LABELS
from apps.engine.population.uniqueness import MODEL_NAMES as POPULATION_MODEL_NAMES
from apps.engine.techniques.registry import TECHNIQUES
from apps.engine.threshold import PRESETS, PROFILES

# --------------------------------------------------------------------------- people and states

ROLE_LABELS = {
    "analyst": "Analyst (privacy officer)",
    "reviewer": "Reviewer",
    "admin": "Administrator",
}
ASSESSMENT_STATUS_LABELS = {
    "draft": "Draft",
    "submitted": "Submitted for review",
    "approved": "Approved",
    "rejected": "Rejected",
}
DATASET_STATUS_LABELS = {
    "converting": "Reading the file",
    "profiling": "Profiling",
    "ready": "Ready",
    "failed": "Profiling failed",
}
JOB_STATUS_LABELS = {
    "queued": "Queued",
    "running": "Running",
    "succeeded": "Succeeded",
    "failed": "Failed",
    "cancelled": "Cancelled",
}
# What each kind of job does, as the pages say it.
JOB_KIND_LABELS = {
    "ingest": "Upload: reading and converting the file",
    "ingest-tables": "Upload: reading, checking and joining the person and event tables",
    "profile": "Profiling the data set",
    "cluster-profile": "Profiling the cluster table on the cluster",
    "assessment-risk": "Measuring the data risk (Step 4)",
    "assessment-search": "Searching for the optimal de-identification (Step 7)",
    "assessment-apply": "Writing the de-identified file (Step 7)",
    "assessment-synthetic": "Generating and attacking synthetic data (Step 7)",
    "assessment-table": "Protecting the table with complementary suppression (Step 7)",
    "report": "Preparing the signed report (Step 9)",
}
DECISION_LABELS = {"approve": "Approve", "reject": "Reject"}
# A decision once recorded, as the report and the pages state it.
DECISION_OUTCOME_LABELS = {"approve": "Approved", "reject": "Rejected"}

# --------------------------------------------------------------------------- Steps 1-3

RELEASE_MODEL_LABELS = {
    "public": "Public",
    "semi_public": "Semi-public",
    "non_public": "Non-public",
}
AGREEMENT_KIND_LABELS = {
    "": "None recorded",
    "dsa": "Data sharing agreement",
    "terms_of_use": "Terms of use",
}
THRESHOLD_MODE_LABELS = {
    "profile": "From the invasion-of-privacy assessment",
    "preset": "A published preset",
    "custom": "Custom, with a written justification",
}
VARIABLE_ROLE_LABELS = {
    "direct": "Direct identifier",
    "quasi": "Quasi-identifier",
    "sensitive": "Sensitive",
    "other": "Other",
}
# What profiling found a column to hold (apps.datasets.profiling).
INFERRED_TYPE_LABELS = {
    "integer": "whole numbers",
    "decimal": "decimal numbers",
    "date": "dates",
    "datetime": "dates with a time",
    "categorical": "categories",
    "free_text": "free text",
    "identifier_like": "identifier-like (almost every value distinct)",
    "boolean": "yes / no",
    "empty": "empty",
}
# The seven factors of the invasion-of-privacy questionnaire (IPC 2016, step 3), by name.
INVASION_FACTOR_LABELS = {
    "sensitivity": "sensitivity",
    "detail": "level of detail",
    "individuals": "number of individuals",
    "harm": "harm from misuse",
    "permitted_without_consent": "disclosure permitted without consent",
    "freely_given": "information given freely",
    "consent_or_notice": "consent to or notice of the use",
}

# --------------------------------------------------------------------------- Step 5

CONTROL_LABELS = {
    "need_to_know": "need-to-know access",
    "confidentiality_agreements": "confidentiality pledges",
    "retention_and_disposal": "retention and disposal",
    "no_third_party_disclosure": "no disclosure to third parties",
    "policies_enforced": "policies enforced",
    "training": "training",
    "breach_protocol": "breach protocol",
    "anti_malware": "anti-malware",
    "audit_trail": "access logged",
    "encrypted_transmission": "encrypted transmission",
    "physical_security": "physical security",
}
MOTIVE_LABELS = {
    "past_without_incident": "past work without incident",
    "reasons_to_reidentify": "something to gain from re-identifying",
    "expertise_and_resources": "expertise and resources",
    "linkable_data": "other data to link",
}

# --------------------------------------------------------------------------- Step 7

HIERARCHY_KIND_LABELS = {
    "interval": "Numeric intervals",
    "date": "Dates",
    "prefix": "Prefix masking",
    "categorical": "Categorical groups",
    "arx": "Imported ARX hierarchy",
    "suppress": "Keep or suppress only (*)",
    "icd10": "ICD-10 codes",
    "icd9cm": "ICD-9-CM codes",
}
# How a direct identifier was masked, in a few words (pages) …
MASKING_METHOD_LABELS = {
    "remove": "removed",
    "hmac": "keyed pseudonym",
    "random": "random pseudonym",
    "encrypt": "encrypted",
    "mask": "character masking",
    "scrub": "scrubbed (detected spans replaced)",
}
# … and in full, with where its keys stay (the report).
MASKING_METHOD_DETAILS = {
    "remove": "Removed: the column is not in the release",
    "hmac": "Pseudonymized with a keyed hash (HMAC-SHA-256); the per-release key is kept "
    "apart from the release, by the custodian",
    "random": "Replaced by random pseudonyms; the linking table is kept apart from the release, "
    "by the custodian",
    "encrypt": "Encrypted (reversible); the key is kept by the custodian",
    "mask": "Character masking",
    "scrub": "Scrubbed: each span the free-text detectors found is replaced by a typed "
    "placeholder ([NAME], [PHONE], [DATE]…); the rest of the text is released",
}
METRIC_LABELS = {
    "loss": "Loss (Iyengar 2002)",
    "entropy": "Non-uniform entropy (El Emam et al. 2009)",
    "precision": "Precision (Sweeney)",
    "discernibility": "Discernibility",
    "aecs": "Average equivalence class size",
}
# ARX's privacy models on a sensitive variable (apps.engine.sensitive).
PRIVACY_MODEL_LABELS = {
    "distinct-l": "Distinct l-diversity: at least l different values in every released group",
    "entropy-l": "Entropy l-diversity: the values in every group are as spread as l equally "
    "frequent ones",
    "recursive-cl": "Recursive (c, l)-diversity: the most frequent value is not too dominant",
    "equal-t": "t-closeness (equal distance): every group's distribution is within t of the "
    "whole data set's",
    "hierarchical-t": "t-closeness (hierarchical distance): distance along a hierarchy of the "
    "sensitive variable",
    "ordered-t": "t-closeness (ordered distance, numbers): as above, distance along the "
    "numeric order",
}

# --------------------------------------------------------------------------- the audit trail

# The actions the product records (``noun.verb``): the audit page's words for them.
AUDIT_ACTION_LABELS = {
    "auth.login": "Signed in",
    "auth.login_failed": "Failed sign-in",
    "auth.logout": "Signed out",
    "auth.lockout": "Sign-in locked after repeated failures",
    "auth.login_failed_repeated": "Failed API authentications repeated (aggregated count)",
    "auth.throttled": "API authentication throttled after repeated failures",
    "auth.password_change": "Password changed",
    "auth.token_create": "API key created",
    "auth.token_revoke": "API key revoked",
    "admin.add": "Added in the administration site",
    "admin.change": "Changed in the administration site",
    "admin.delete": "Deleted in the administration site",
    "dataset.upload": "Data set uploaded",
    "dataset.release_model": "Intended release model changed",
    "dataset.identifier_values_read": "Values of direct identifiers shown",
    "download.refused": "Release download refused (file differs from the approved one)",
    "dataset.delete": "Data set deleted",
    "classification.change": "Classification changed",
    "assessment.threshold": "Threshold set",
    "assessment.submit": "Assessment submitted for review",
    "job.run": "Job run",
    "review.decision": "Review decision",
    "report.generate": "Report generated",
    "download.release": "Release downloaded",
    "download.report": "Report downloaded",
    "download.report_refused": "Report download refused (file differs from the signed one)",
    "download.secrets": "Secrets downloaded",
    "cluster.connection_set": "Spark connection set",
    "cluster.connection_clear": "Spark connection removed",
    "dataset.register_cluster": "Cluster table registered as a data set",
    "release.cluster_verified": "Cluster release checked against its approved manifest",
    "release.cluster_refused": "Cluster release differs from its approved manifest",
    "assessment.justifications": "Justifications of altered variables recorded",
    "summary.generate": "Recipient summary generated",
    "download.summary_pdf": "Recipient summary downloaded",
    "download.summary_json": "Recipient summary's JSON twin downloaded",
    "download.summary_refused": "Recipient summary download refused (file differs)",
    "release.trigger": "Re-assessment trigger recorded",
    "release.trigger_resolved": "Re-assessment trigger resolved",
    "release.interval": "Re-assessment interval changed",
}

# --------------------------------------------------------------------------- the one table

LABELS: dict[str, Mapping[str, str]] = {
    "role": ROLE_LABELS,
    "assessment_status": ASSESSMENT_STATUS_LABELS,
    "dataset_status": DATASET_STATUS_LABELS,
    "job_status": JOB_STATUS_LABELS,
    "job_kind": JOB_KIND_LABELS,
    "decision": DECISION_LABELS,
    "decision_outcome": DECISION_OUTCOME_LABELS,
    "release_model": RELEASE_MODEL_LABELS,
    "agreement_kind": AGREEMENT_KIND_LABELS,
    "threshold_mode": THRESHOLD_MODE_LABELS,
    "threshold_profile": {key: str(data["name"]) for key, data in PROFILES.items()},
    "threshold_preset": {key: str(data["name"]) for key, data in PRESETS.items()},
    "variable_role": VARIABLE_ROLE_LABELS,
    "inferred_type": INFERRED_TYPE_LABELS,
    "invasion_factor": INVASION_FACTOR_LABELS,
    "control": CONTROL_LABELS,
    "motive": MOTIVE_LABELS,
    "hierarchy_kind": HIERARCHY_KIND_LABELS,
    "masking_method": MASKING_METHOD_LABELS,
    "masking_method_detail": MASKING_METHOD_DETAILS,
    "metric": METRIC_LABELS,
    "privacy_model": PRIVACY_MODEL_LABELS,
    "technique": {t.key: t.title for t in TECHNIQUES.values()},
    "span_type": SPAN_LABELS,
    "population_model": POPULATION_MODEL_NAMES,
    "audit_action": AUDIT_ACTION_LABELS,
    # why a release must be re-assessed (apps.reviews.models.ReassessmentTrigger.Kind)
    "reassessment_trigger": {
        "new_public_data": "New public data",
        "new_recipient": "New recipient",
        "incident": "Incident",
        "scheduled_review": "Scheduled review",
    },
}


def label_for(family: str, key: str | None, *, empty: str = "—") -> str:
    """The words for ``key`` of ``family`` (``empty`` for no key). A key without a label is
    returned as it is, so that the internal-keys test sees it; it never guesses words."""
    if key is None:
        return empty
    table = LABELS[family]
    if key in table:
        return table[key]
    return empty if key == "" else str(key)


def choices(family: str) -> list[tuple[str, str]]:
    """``(key, label)`` pairs of a family, for a form's or a serializer's choices."""
    return list(LABELS[family].items())


def invasion_explanation(invasion: Mapping[str, object]) -> str:
    """Step 3's score in words, from a stored invasion-of-privacy result (its ``scores``):
    "total 3/14 (sensitivity 0, level of detail 1, …) → low". Built at display time, so that
    results stored before a factor had its words read as well as new ones."""
    scores = invasion.get("scores")
    if not isinstance(scores, list | tuple) or not scores:
        return str(invasion.get("explanation", ""))
    parts = [
        f"{label_for('invasion_factor', str(s.get('factor')))} {s.get('score')}"
        + ("" if s.get("answer") is not None else " (unanswered)")
        for s in scores
        if isinstance(s, Mapping)
    ]
    total, level = invasion.get("total"), invasion.get("level")
    text = f"total {total}/{invasion.get('maximum', 14)} ({', '.join(parts)}) → {level}"
    if "raised" in str(invasion.get("explanation", "")):
        text += " (raised from low: high sensitivity or harm)"
    return text
