"""Signing identities and PAdES signatures: valid, tampered, foreign, garbage."""

from __future__ import annotations

import asyncio
import io
import re

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import ExtensionOID, NameOID
from django.core.files.storage import default_storage
from django.core.management import call_command
from weasyprint import HTML

from apps.accounts.models import signing_passphrase_purpose
from apps.core import crypto
from apps.core.errors import ApplicationError
from apps.reports import signing
from apps.reports.identity import organization_certificate, organization_signing_ensure


@pytest.fixture(scope="module")
def small_pdf() -> bytes:
    html = (
        "<html><body style='font-family: DejaVu Sans'><h1>Step 9 report</h1>"
        "<p>Overall risk 0.0540 against a threshold of 0.1000.</p></body></html>"
    )
    return HTML(string=html).write_pdf()


def _sign(pdf: bytes, organization) -> bytes:  # type: ignore[no-untyped-def]
    organization_signing_ensure(organization=organization)
    organization.refresh_from_db()
    with default_storage.open(organization.signing_certificate_path, "rb") as handle:
        bundle = handle.read()
    return signing.sign_pdf(
        pdf,
        bundle,
        crypto.open_text(
            organization.signing_passphrase_sealed,
            purpose=signing_passphrase_purpose(organization.id),
        ),
        reason="Step 9 report",
        location=organization.name,
        signer_name=organization.name,
    )


def _tamper_in_signed_range(signed: bytes) -> bytes:
    """Flip one byte inside a content stream covered by the first /ByteRange range."""
    start, length, _second, _ = map(
        int, re.search(rb"/ByteRange\s*\[\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", signed).groups()
    )
    assert start == 0
    stream = signed.index(b"stream", 64) + len(b"stream\n") + 5  # inside the first stream
    assert 64 < stream < length
    tampered = bytearray(signed)
    tampered[stream] ^= 0x20
    return bytes(tampered)


def test_identity_is_a_self_signed_signing_certificate():
    bundle, passphrase, pem = signing.create_signing_identity("Custodian", "Custodian")
    certificate = x509.load_pem_x509_certificate(pem)
    assert certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "Custodian"
    assert (
        certificate.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value
        == "Custodian"
    )
    usage = certificate.extensions.get_extension_for_oid(ExtensionOID.KEY_USAGE).value
    assert usage.digital_signature and usage.content_commitment  # nonRepudiation
    assert signing.certificate_pem(bundle, passphrase) == pem
    assert len(passphrase) >= 32
    with pytest.raises(ValueError):
        signing.certificate_pem(bundle, "wrong passphrase")


def test_organization_identity_is_created_once_and_stored(custodian):
    assert not custodian.signing_certificate_path
    pem = organization_signing_ensure(organization=custodian)
    custodian.refresh_from_db()
    assert custodian.signing_certificate_path == f"organizations/{custodian.id}/signing/signing.p12"
    assert crypto.is_sealed(custodian.signing_passphrase_sealed)
    assert default_storage.exists(custodian.signing_certificate_path)
    assert organization_signing_ensure(organization=custodian) == pem
    assert organization_certificate(custodian) == pem


def test_an_unreadable_identity_is_an_error_not_a_new_certificate(custodian):
    organization_signing_ensure(organization=custodian)
    custodian.refresh_from_db()
    path, passphrase = custodian.signing_certificate_path, custodian.signing_passphrase_sealed
    default_storage.delete(path)
    with pytest.raises(ApplicationError, match="cannot be read"):
        organization_certificate(custodian)
    custodian.refresh_from_db()
    assert (custodian.signing_certificate_path, custodian.signing_passphrase_sealed) == (
        path,
        passphrase,
    )


def test_signed_pdf_is_valid_for_the_organization(custodian, small_pdf):
    signed = _sign(small_pdf, custodian)
    check = signing.verify_pdf(signed, [organization_certificate(custodian)])
    assert (check.signed, check.valid, check.intact, check.trusted) == (True, True, True, True)
    assert check.signer == "Custodian"
    assert check.signed_at is not None and check.problem == ""
    # DER is accepted as well as PEM
    der = x509.load_pem_x509_certificate(organization_certificate(custodian)).public_bytes(
        Encoding.DER
    )
    assert signing.verify_pdf(signed, [der]).valid


def test_pyhanko_itself_validates_the_signature(custodian, small_pdf):
    from asn1crypto import pem as asn1_pem
    from asn1crypto import x509 as asn1_x509
    from pyhanko.pdf_utils.reader import PdfFileReader
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko.sign.validation.status import SignatureCoverageLevel
    from pyhanko_certvalidator import ValidationContext

    signed = _sign(small_pdf, custodian)
    reader = PdfFileReader(io.BytesIO(signed))
    [embedded] = reader.embedded_signatures
    assert embedded.field_name == "deidweb-signature"
    assert embedded.sig_object["/SubFilter"] == "/ETSI.CAdES.detached"  # PAdES
    _, _, der = asn1_pem.unarmor(organization_certificate(custodian))
    context = ValidationContext(trust_roots=[asn1_x509.Certificate.load(der)])
    status = validate_pdf_signature(embedded, context)
    assert status.bottom_line and status.intact and status.valid and status.trusted
    assert status.coverage == SignatureCoverageLevel.ENTIRE_FILE
    assert status.signing_cert.subject.native["common_name"] == "Custodian"


def test_one_changed_byte_breaks_the_signature(custodian, small_pdf):
    signed = _sign(small_pdf, custodian)
    check = signing.verify_pdf(
        _tamper_in_signed_range(signed), [organization_certificate(custodian)]
    )
    assert check.signed and not check.valid and not check.intact
    assert "changed after signing" in check.problem


def test_content_appended_after_signing_is_not_valid(custodian, small_pdf):
    from pyhanko.pdf_utils import generic
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter

    signed = _sign(small_pdf, custodian)
    writer = IncrementalPdfFileWriter(io.BytesIO(signed))
    writer.root["/Lang"] = generic.TextStringObject("fr")  # a valid-looking later revision
    writer.update_root()
    out = io.BytesIO()
    writer.write(out)
    check = signing.verify_pdf(out.getvalue(), [organization_certificate(custodian)])
    assert not check.valid and "changed after signing" in check.problem


def test_another_organizations_certificate_is_not_trusted(custodian, org_factory, small_pdf):
    signed = _sign(small_pdf, custodian)
    other = org_factory("Elsewhere")
    check = signing.verify_pdf(signed, [organization_certificate(other)])
    assert check.signed and check.intact and not check.trusted and not check.valid
    assert (
        check.problem == "The report was signed by a certificate this organization does not hold."
    )
    assert check.signer == "Custodian"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"garbage",
        b"%PDF-1.7\n" + b"\x00" * 500,
        b"%PDF-1.7\n1 0 obj <</ByteRange [0 1 2 3]>> endobj\n%%EOF",
    ],
)
def test_garbage_is_invalid_without_an_exception(data):
    check = signing.verify_pdf(data, [b"not a certificate"])
    assert not check.valid and not check.intact and check.problem


def test_unsigned_pdf_says_no_signature(small_pdf, custodian):
    check = signing.verify_pdf(small_pdf, [organization_certificate(custodian)])
    assert not check.signed and not check.valid
    assert "No signature found" in check.problem


def test_signing_identity_command(custodian, capsys):
    call_command("signing_identity", organization=custodian.slug)
    first = capsys.readouterr().out
    assert "subject: O=Custodian,CN=Custodian" in first and "created" in first
    fingerprint = re.search(r"SHA-256 fingerprint: ([0-9A-F:]{95})", first).group(1)
    call_command("signing_identity", organization=custodian.slug)
    second = capsys.readouterr().out
    assert "existing" in second and fingerprint in second


def test_signing_and_checking_work_inside_a_running_event_loop(small_pdf):
    """pyHanko's synchronous API starts its own event loop; an async caller must not break it."""
    bundle, passphrase, pem = signing.create_signing_identity("Async", "Async")

    async def inside() -> signing.SignatureCheck:
        signed = signing.sign_pdf(
            small_pdf, bundle, passphrase, reason="r", location="l", signer_name="Async"
        )
        return signing.verify_pdf(signed, [pem])

    assert asyncio.run(inside()).valid
