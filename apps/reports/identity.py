"""The organization's signing identity: the certificate and key its Step 9 reports are signed
with (a PKCS#12 bundle in storage, its passphrase sealed on the organization), the
certificates of identities it replaced, and the timestamp authority that countersigns.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction

from apps.accounts.models import Organization, signing_passphrase_purpose
from apps.accounts.selectors import membership_get
from apps.audit.services import audit_record
from apps.core import crypto
from apps.core.errors import ApplicationError
from apps.core.outbound import OutboundPolicy, OutboundRefused, check_url
from apps.reports import signing

logger = logging.getLogger(__name__)


def _signing_path(organization: Organization) -> str:
    return f"organizations/{organization.id}/signing/signing.p12"


def read_stored(name: str) -> bytes:
    with default_storage.open(name, "rb") as handle:
        data: bytes = handle.read()
    return data


def signing_identity(organization: Organization) -> tuple[bytes, str] | None:
    """The stored PKCS#12 bundle and its passphrase; None when the organization has none.

    A recorded identity that cannot be read is an error, never a reason to make a new one:
    a new certificate would silently stop every report signed so far from verifying."""
    if not (organization.signing_certificate_path and organization.signing_passphrase_sealed):
        return None
    try:
        passphrase = crypto.open_text(
            organization.signing_passphrase_sealed,
            purpose=signing_passphrase_purpose(organization.id),
        )
        bundle = read_stored(organization.signing_certificate_path)
        signing.certificate_of(bundle, passphrase)
    except (OSError, ValueError, crypto.SecretUnreadable):
        logger.exception("the signing identity of organization %s is unreadable", organization.id)
        raise ApplicationError(
            "The organization's signing certificate cannot be read from storage; an "
            "administrator must restore it (reports signed with it would no longer verify "
            "against a new one)."
        ) from None
    return bundle, passphrase


def organization_signing_ensure(*, organization: Organization) -> bytes:
    """The organization's signing certificate (PEM), creating the identity when it has none.

    The PKCS#12 bundle (key and certificate, encrypted with the passphrase) goes to the
    storage backend; the passphrase is kept on the organization, apart from the file, sealed
    with a data key of its own under the master key (``apps.core.crypto``)."""
    existing = signing_identity(organization)
    if existing is not None:
        return signing.certificate_pem(*existing)
    with transaction.atomic():
        locked = Organization.objects.select_for_update().get(id=organization.id)
        existing = signing_identity(locked)  # another process may have created it meanwhile
        if existing is None:
            bundle, passphrase, pem = signing.create_signing_identity(locked.name, locked.name)
            name = default_storage.save(_signing_path(locked), ContentFile(bundle))
            locked.signing_certificate_path = name
            locked.signing_passphrase_sealed = crypto.seal_text(
                passphrase, purpose=signing_passphrase_purpose(locked.id)
            )
            locked.save(
                update_fields=[
                    "signing_certificate_path",
                    "signing_passphrase_sealed",
                    "updated_at",
                ]
            )
        else:
            pem = signing.certificate_pem(*existing)
    organization.signing_certificate_path = locked.signing_certificate_path
    organization.signing_passphrase_sealed = locked.signing_passphrase_sealed
    return pem


def organization_certificates(organization: Organization) -> list[bytes]:
    """Every certificate the organization's reports may be signed with: the current one and
    those of identities it replaced (their reports stay verifiable)."""
    current = organization_signing_ensure(organization=organization)
    previous = [pem.encode() for pem in organization.signing_previous_certificates or []]
    return [current, *previous]


def timestamp_url(organization: Organization) -> str:
    """The timestamp authority that countersigns the organization's signatures, if any."""
    return organization.signing_timestamp_url or str(getattr(settings, "DEIDWEB_TSA_URL", ""))


def organization_sign(
    pdf: bytes, identity: tuple[Any, Any], organization: Organization, *, reason: str, what: str
) -> bytes:
    """``pdf`` signed with the organization's identity (key, certificate) and countersigned
    by its timestamp authority, if any: every signed document's one way (the report, the
    recipient summary). ``what`` names the document in the message of a failed timestamp."""
    try:
        return signing.sign_pdf(
            pdf,
            identity[0],
            identity[1],
            reason=reason,
            location=organization.name,
            signer_name=organization.name,
            timestamp_url=timestamp_url(organization),
            timestamp_policy=timestamp_policy(),
        )
    except signing.TimestampError as exc:
        raise ApplicationError(
            f"{exc} The {what} was not signed; an administrator must correct the address on "
            "the organization's signing page."
        ) from None


def timestamp_policy() -> OutboundPolicy:
    """Where the server may call a timestamp authority (``apps.core.outbound``): public https
    addresses, and what the operator allows besides (plain http, in-house networks)."""
    return OutboundPolicy.of(
        allow_http=bool(getattr(settings, "DEIDWEB_TSA_ALLOW_HTTP", False)),
        allowed_networks=getattr(settings, "DEIDWEB_TSA_ALLOWED_NETWORKS", ()),
        timeout=float(getattr(settings, "DEIDWEB_TSA_TIMEOUT_SECONDS", 10)),
    )


@transaction.atomic
def organization_signing_import(
    *, organization: Organization, user: Any, bundle: bytes, passphrase: str
) -> dict[str, str]:
    """Replace the organization's signing identity by an imported PKCS#12 bundle (typically
    issued by a certification authority). Administrators only; checked before use; the old
    certificate is kept so that earlier reports still verify; audited with both
    fingerprints. Returns the new certificate's description."""
    if not membership_get(user=user, organization=organization).is_admin:
        raise ApplicationError("Only administrators change the signing certificate.", status=403)
    try:
        pem = signing.check_identity(bundle, passphrase, organization=organization.name)
    except signing.IdentityError as exc:
        raise ApplicationError(f"The signing certificate was not imported: {exc}") from None
    locked = Organization.objects.select_for_update().get(id=organization.id)
    previous_pem = b""
    if signing_identity(locked) is not None:
        previous_pem = signing.certificate_pem(*signing_identity(locked))  # type: ignore[misc]
    name = default_storage.save(_signing_path(locked), ContentFile(bundle))
    history = list(locked.signing_previous_certificates or [])
    if previous_pem and previous_pem.decode() not in history and previous_pem != pem:
        history.append(previous_pem.decode())
    old_path = locked.signing_certificate_path
    locked.signing_certificate_path = name
    locked.signing_passphrase_sealed = crypto.seal_text(
        passphrase, purpose=signing_passphrase_purpose(locked.id)
    )
    locked.signing_previous_certificates = history
    locked.save(
        update_fields=[
            "signing_certificate_path",
            "signing_passphrase_sealed",
            "signing_previous_certificates",
            "updated_at",
        ]
    )
    for field in (
        "signing_certificate_path",
        "signing_passphrase_sealed",
        "signing_previous_certificates",
    ):
        setattr(organization, field, getattr(locked, field))
    described = signing.describe_certificate(pem)
    audit_record(
        organization=organization,
        actor=user,
        action="organization.signing_imported",
        obj=organization,
        details={
            "subject": described["subject"],
            "sha256": described["sha256"],
            "replaced_sha256": signing.describe_certificate(previous_pem)["sha256"]
            if previous_pem
            else "",
            "replaced_file": old_path,
        },
    )
    return described


@transaction.atomic
def organization_timestamp_url_set(*, organization: Organization, user: Any, url: str) -> None:
    """Set (or clear) the organization's timestamp authority; administrators only, audited."""
    from django.core.exceptions import ValidationError
    from django.core.validators import URLValidator

    if not membership_get(user=user, organization=organization).is_admin:
        raise ApplicationError("Only administrators change the timestamp authority.", status=403)
    url = url.strip()
    if url:
        if len(url) > Organization._meta.get_field("signing_timestamp_url").max_length:  # type: ignore[operator]
            raise ApplicationError("The timestamp authority's address is too long.")
        try:
            check_url(url, timestamp_policy(), what="timestamp authority")
        except OutboundRefused as exc:
            raise ApplicationError(
                f"The timestamp authority was not saved: {exc}.", {"field": "timestamp_url"}
            ) from None
        try:
            URLValidator(schemes=["http", "https"])(url)
        except ValidationError:
            raise ApplicationError(f"'{url}' is not an http(s) address.") from None
    Organization.objects.filter(id=organization.id).update(signing_timestamp_url=url)
    previous = organization.signing_timestamp_url
    organization.signing_timestamp_url = url
    audit_record(
        organization=organization,
        actor=user,
        action="organization.timestamp_url",
        obj=organization,
        details={"from": previous, "to": url},
    )


def organization_certificate(organization: Organization) -> bytes:
    """The certificate (PEM) that the organization's reports are checked against.

    Creates the identity on first use: an organization that never signed anything then
    simply holds a certificate no presented report chains to."""
    return organization_signing_ensure(organization=organization)
