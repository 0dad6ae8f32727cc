"""Checking a recipient summary and its JSON twin (issue 28): the PDF's signature, and the
JSON's SHA-256 against the digest the signed PDF carries in its keywords (and prints).

Everything needed is in the two files and the organization's certificates, so the check
holds for copies handed on; the stored summary with the same PDF digest is named when
there is one. ``copy_verify`` is what the verify page and the API call: a PDF carrying a
twin's digest, or one uploaded with a JSON file, is checked as a summary; any other PDF as
a Step 9 report (``report_verify``).
"""

from __future__ import annotations

import io
import logging
from typing import Any

from apps.accounts.models import Organization
from apps.reports import signing
from apps.reports.identity import organization_certificates
from apps.reports.models import RecipientSummary
from apps.reports.summary import DIGEST_MARK, sha256_hex
from apps.reports.verification import report_verify

logger = logging.getLogger(__name__)
_HEX = frozenset("0123456789abcdef")


def carried_digest(pdf: bytes) -> str:
    """The JSON twin's SHA-256 as the PDF's keywords carry it; "" when there is none (not a
    summary, or not a PDF)."""
    from pyhanko.pdf_utils.reader import PdfFileReader  # lazy: heavy, needed here only

    try:
        reader = PdfFileReader(io.BytesIO(pdf), strict=False)
        info = reader.trailer_view.get("/Info")
        keywords = str(info.get_object().get("/Keywords", "")) if info is not None else ""
    except Exception as exc:  # a hostile or broken upload must not become a traceback
        logger.info("summary keywords unreadable: %s: %s", type(exc).__name__, exc)
        return ""
    for word in keywords.split():
        if word.startswith(DIGEST_MARK):
            digest = word[len(DIGEST_MARK) :].lower()
            if len(digest) == 64 and set(digest) <= _HEX:
                return digest
    return ""


def summary_verify(*, organization: Organization, pdf: bytes, twin: bytes | None) -> dict[str, Any]:
    """Is this the organization's signed summary, unchanged, and is ``twin`` exactly the JSON
    it carries the digest of?"""
    check = signing.verify_pdf(pdf, organization_certificates(organization))
    carried = carried_digest(pdf) if pdf else ""
    twin_digest = sha256_hex(twin) if twin else ""
    digest = sha256_hex(pdf)
    stored = RecipientSummary.objects.filter(organization=organization, sha256=digest).first()
    json_matches = bool(carried) and twin_digest == carried
    if not check.valid:
        problem = check.problem
    elif not carried:
        problem = (
            "The PDF carries no JSON twin digest: it is not a recipient summary of this service."
        )
    elif not twin:
        problem = (
            "The summary's signature is valid; upload its JSON twin too, to check it against "
            f"the digest the summary carries ({carried})."
        )
    elif not json_matches:
        problem = (
            f"The JSON file does not match the signed summary: its SHA-256 is {twin_digest}, "
            f"the summary carries {carried}. The JSON was changed after signing, or belongs "
            "to another release."
        )
    else:
        problem = ""
    valid = check.valid and json_matches
    if valid:
        text = (
            f"Valid: the recipient summary is signed by {check.signer} and unchanged, and the "
            f"JSON twin is exactly the one it carries (SHA-256 {carried})."
        )
    else:
        text = f"Not valid: {problem}"
    return {
        "valid": valid,
        "signed": check.signed,
        "intact": check.intact,
        "trusted": check.trusted,
        "signer": check.signer,
        "signed_at": check.signed_at.isoformat() if check.signed_at else None,
        "problem": problem,
        "sha256": digest,
        "size_bytes": len(pdf),
        "decision": None,
        "summary": text,
        "recipient_summary": {
            "json_sha256_carried": carried,
            "json_sha256": twin_digest,
            "json_matches": json_matches,
            "stored_summary_id": str(stored.id) if stored else None,
            "assessment_id": str(stored.assessment_id) if stored else None,
            "decision_id": str(stored.decision_id) if stored else None,
        },
    }


def copy_verify(
    *, organization: Organization, pdf: bytes, twin: bytes | None = None
) -> dict[str, Any]:
    """The verify page's and the API's one check (module docstring)."""
    if twin or carried_digest(pdf):
        return summary_verify(organization=organization, pdf=pdf, twin=twin)
    return {**report_verify(organization=organization, pdf=pdf), "recipient_summary": None}


__all__ = ["carried_digest", "copy_verify", "summary_verify"]
