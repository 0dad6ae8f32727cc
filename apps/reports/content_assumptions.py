"""The report's "Assumptions, justifications and overrides" section: the method's standing
assumptions, stated so a reader can challenge them, and every choice that departed from the
method's default with the reason recorded for it."""

from __future__ import annotations

from typing import Any

from apps.assessments.models import Assessment


def standing_assumptions(assessment: Assessment, overall: dict[str, Any] | None) -> list[str]:
    """The method's standing assumptions, stated so a reader can challenge them."""
    risk = assessment.risk_result or {}
    context = assessment.context_result or {}
    search = assessment.search_result or {}
    knows = (assessment.threat_model or {}).get("target_in_sample", "known") == "known"
    items = [
        "An adversary is assumed to know that the person they look for is in the data set "
        "(prosecutor risk), the conservative choice of the guideline (IPC 2016, scope)."
        if knows
        else "The threat model records an adversary who cannot tell whether the person they "
        "look for is in the data set; the data risk is still measured as if they could "
        "(prosecutor risk), the conservative choice of the guideline (IPC 2016, scope).",
        "Equivalence classes are formed on the confirmed quasi-identifiers only; a missing value "
        "counts as a value of its own (IPC 2016, step 4).",
        "Every quasi-identifier is assumed to be knowable by an adversary from other sources; "
        "the sensitive and other variables are assumed not to be (IPC 2016, step 2).",
    ]
    if risk.get("unit") == "person":
        items.append(
            "The data holds several rows per person: risk is counted in persons, never rows. "
            f"An adversary is assumed to know a person's person-level values and at most "
            f"{risk.get('power')} of their events; a person's count is the number of persons "
            "sharing those values and holding every event of the worst such set (El Emam & "
            "Arbuckle 2013, ch. 6; k^m-anonymity, Terrovitis et al. 2008)."
        )
    if risk.get("profile", {}).get("strict_average_cap") is not None and (
        assessment.effective_release_model == "non_public"
    ):
        items.append(
            "Strict average risk uses the cap of "
            f"{risk['profile']['strict_average_cap']}: above it the max risk applies "
            "(IPC 2016, step 4)."
        )
    if assessment.effective_release_model == "public":
        items.append(
            "A public release is assumed to be attacked: the context risk is 1 (IPC 2016, step 5)."
        )
    elif context:
        acquaintance = context.get("acquaintance") or {}
        breach = context.get("breach") or {}
        if acquaintance:
            items.append(
                f"Each person is assumed to know {acquaintance.get('acquaintances')} people "
                f"(effective {acquaintance.get('effective_acquaintances')}); prevalence "
                f"{acquaintance.get('prevalence')} — source: "
                f"{context.get('prevalence_source') or 'not given'} (IPC 2016, step 5)."
            )
        if breach:
            items.append(
                f"The recipient's sector is assumed to suffer a breach with probability "
                f"{breach.get('rate')} — source: {breach.get('source')} (IPC 2016, step 5)."
            )
        if context.get("release_model") != context.get("declared_release_model"):
            items.append(
                "The release was declared non-public but no data sharing agreement is recorded, "
                "so it is handled as semi-public (IPC 2016, step 1)."
            )
    if search:
        items.append(
            f"At most {float(search.get('suppression_limit', 0)) * 100:.1f}% of the records may be "
            "suppressed (IPC 2016, step 7.2 and step 8)."
        )
    return items


def justification_items(
    assessment: Assessment, variables: list[dict[str, Any]]
) -> list[dict[str, str]]:
    """Each override and its reason: the threshold, the roles, the purpose, the utility."""
    items = []
    threshold = assessment.threshold_result or {}
    if threshold.get("origin") and threshold.get("origin") != "profile":
        items.append(
            {
                "topic": "Step 3: threshold override",
                "text": f"{threshold.get('origin', '').capitalize()} threshold {threshold.get('value')} "
                f"instead of {threshold.get('profile_threshold')} from the questionnaire"
                + (
                    f", outside the profile's range {threshold['profile_range'][0]} to "
                    f"{threshold['profile_range'][1]}"
                    if threshold.get("outside_profile_range")
                    else ""
                )
                + f". Justification: {threshold.get('justification') or '(none recorded)'}",
            }
        )
    for v in variables:
        if v["overridden"]:
            items.append(
                {
                    "topic": f"Step 2: {v['name']}",
                    "text": f"Classified as {v['role_label'].lower()} although the suggestion was "
                    f"{v['suggested_label'].lower()}. Reason: {v['reason'] or '(none)'}",
                }
            )
        if v["keep_for_analysis"]:
            items.append(
                {
                    "topic": f"Step 2: {v['name']}",
                    "text": "Kept for the analysis and therefore generalized rather than removed "
                    f"(IPC 2016, step 2). Reason: {v['reason'] or '(none)'}",
                }
            )
    if assessment.purpose:
        items.append({"topic": "Step 1: purpose of the release", "text": assessment.purpose})
    if assessment.utility_note:
        items.append(
            {"topic": "Step 8: utility accepted for the purpose", "text": assessment.utility_note}
        )
    return items
