"""#16: an organization signs with a certificate issued by a certification authority (a PKCS#12
bundle an administrator imports) and, when configured, has each signature countersigned by an
RFC 3161 timestamp authority — here a real HTTP one started by the test on the loopback."""

from __future__ import annotations

import datetime as dt
import http.server
import threading
from collections.abc import Iterator

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.audit.models import AuditEvent
from apps.reports import signing
from apps.reports.identity import organization_certificates, organization_signing_import
from apps.reports.models import Report
from apps.reports.verification import report_pdf, report_verify
from tests.reports.helpers import run_report_job

pytestmark = pytest.mark.django_db
NOW = dt.datetime.now(dt.UTC)


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _name(common: str, organization: str | None = None) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    if organization is not None:  # a certificate the organization imports names it (O=)
        parts.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(parts)


def _certificate(
    subject: str,
    key: rsa.RSAPrivateKey,
    issuer: str,
    issuer_key: rsa.RSAPrivateKey,
    *,
    ca: bool = False,
    days: tuple[int, int] = (-1, 365),
    usage: ExtendedKeyUsageOID | None = None,
    organization: str | None = None,
) -> x509.Certificate:
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject, organization))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW + dt.timedelta(days=days[0]))
        .not_valid_after(NOW + dt.timedelta(days=days[1]))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=not ca,
                content_commitment=not ca,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=ca,
                crl_sign=ca,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=True)
    return builder.sign(issuer_key, hashes.SHA256())


@pytest.fixture(scope="module")
def authority() -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
    key = _key()
    return key, _certificate(
        "Test Certification Authority", key, "Test Certification Authority", key, ca=True
    )


def _bundle(
    authority, subject="Custodian Privacy Office", *, days=(-1, 365), passphrase="s3cret-phrase"
):  # type: ignore[no-untyped-def]
    ca_key, ca_cert = authority
    key = _key()
    cert = _certificate(
        subject, key, "Test Certification Authority", ca_key, days=days, organization="Custodian"
    )
    data = pkcs12.serialize_key_and_certificates(
        b"signing",
        key,
        cert,
        [ca_cert],
        serialization.BestAvailableEncryption(passphrase.encode()),
    )
    return data, cert


@pytest.fixture(scope="module")
def timestamp_authority(authority) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """An RFC 3161 timestamp authority over HTTP on 127.0.0.1 (pyHanko's reference responder)."""
    from asn1crypto import keys, tsp
    from asn1crypto import x509 as asn1_x509
    from pyhanko.sign.timestamps.dummy_client import DummyTimeStamper

    ca_key, _ = authority
    key = _key()
    cert = _certificate(
        "Test Timestamp Authority",
        key,
        "Test Certification Authority",
        ca_key,
        usage=ExtendedKeyUsageOID.TIME_STAMPING,
    )
    stamper = DummyTimeStamper(
        tsa_cert=asn1_x509.Certificate.load(cert.public_bytes(serialization.Encoding.DER)),
        tsa_key=keys.PrivateKeyInfo.load(
            key.private_bytes(
                serialization.Encoding.DER,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        ),
    )
    served: list[int] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers["Content-Length"]))
            answer = stamper.request_tsa_response(tsp.TimeStampReq.load(body)).dump()
            served.append(len(answer))
            self.send_response(200)
            self.send_header("Content-Type", "application/timestamp-reply")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/tsr"
    server.shutdown()


def test_checks_refuse_bundles_that_cannot_sign(authority):
    good, cert = _bundle(authority)
    pem = signing.check_identity(good, "s3cret-phrase")
    assert x509.load_pem_x509_certificate(pem).fingerprint(hashes.SHA256()) == cert.fingerprint(
        hashes.SHA256()
    )
    with pytest.raises(signing.IdentityError, match="passphrase is wrong"):
        signing.check_identity(good, "wrong")
    with pytest.raises(signing.IdentityError, match="not a PKCS#12 bundle"):
        signing.check_identity(b"%PDF-1.7 not a bundle", "s3cret-phrase")
    expired, _ = _bundle(authority, days=(-400, -35))
    with pytest.raises(signing.IdentityError, match="not today"):
        signing.check_identity(expired, "s3cret-phrase")
    ca_key, ca_cert = authority
    ca_only = pkcs12.serialize_key_and_certificates(
        b"ca", ca_key, ca_cert, None, serialization.BestAvailableEncryption(b"pw")
    )
    with pytest.raises(signing.IdentityError, match="certification authority's certificate"):
        signing.check_identity(ca_only, "pw")


def test_an_administrator_imports_a_ca_certificate_and_old_reports_still_verify(
    report, authority, custodian, admin_user, analyst, client_for
):
    organization = custodian
    earlier = report_pdf(report)
    before = report_verify(organization=organization, pdf=earlier)
    assert before["valid"] is True
    bundle, cert = _bundle(authority)
    url = reverse("organization-signing", kwargs={"org": organization.slug})

    refused = client_for(analyst).post(
        url,
        {
            "action": "import",
            "passphrase": "s3cret-phrase",
            "bundle": SimpleUploadedFile("o.p12", bundle),
        },
    )
    assert refused.status_code == 403
    wrong = client_for(admin_user).post(
        url,
        {"action": "import", "passphrase": "nope", "bundle": SimpleUploadedFile("o.p12", bundle)},
        follow=True,
    )
    assert "passphrase is wrong" in wrong.content.decode()
    client_for(admin_user).post(
        url,
        {
            "action": "import",
            "passphrase": "s3cret-phrase",
            "bundle": SimpleUploadedFile("o.p12", bundle),
        },
    )
    organization.refresh_from_db()
    fingerprint = cert.fingerprint(hashes.SHA256()).hex().upper()
    shown = ":".join(fingerprint[i : i + 2] for i in range(0, len(fingerprint), 2))
    page = client_for(analyst).get(url).content.decode()
    assert shown in page and "Test Certification Authority" in page
    assert 'data-testid="previous-certificates"' in page
    event = AuditEvent.objects.get(action="organization.signing_imported")
    assert event.details["sha256"] == shown and event.details["replaced_sha256"]
    assert len(organization_certificates(organization)) == 2
    # The report signed with the old, self-signed identity still verifies.
    assert report_verify(organization=organization, pdf=earlier)["valid"] is True
    # A document signed now is signed by the imported certificate.
    from weasyprint import HTML

    unsigned = HTML(string="<p>A document signed after the import.</p>").write_pdf()
    signed = signing.sign_pdf(
        unsigned, bundle, "s3cret-phrase", reason="test", location="here", signer_name="x"
    )
    check = signing.verify_pdf(signed, organization_certificates(organization))
    assert check.valid and "Custodian Privacy Office" in check.signer
    # Importing the same bundle again keeps one previous certificate, not two.
    organization_signing_import(
        organization=organization, user=admin_user, bundle=bundle, passphrase="s3cret-phrase"
    )
    organization.refresh_from_db()
    assert len(organization.signing_previous_certificates) == 1


def test_a_timestamp_authority_countersigns_the_report(
    decided, monkeypatch, custodian, timestamp_authority, settings
):
    import io

    from pypdf import PdfReader

    # The test's authority listens on the loopback over plain http: only because the
    # operator allows it (by default both are refused, tests/reports/test_timestamp_guard.py).
    settings.DEIDWEB_TSA_ALLOW_HTTP = True
    settings.DEIDWEB_TSA_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    custodian.signing_timestamp_url = timestamp_authority
    custodian.save(update_fields=["signing_timestamp_url"])
    job = run_report_job(monkeypatch, decided)
    report = Report.objects.get(id=job.result["report_id"])
    pdf = report_pdf(report)
    check = signing.verify_pdf(pdf, organization_certificates(custodian))
    assert check.valid
    assert check.timestamped_at is not None
    assert abs((check.timestamped_at - dt.datetime.now(dt.UTC)).total_seconds()) < 600
    text = " ".join(
        " ".join((p.extract_text() or "").split()) for p in PdfReader(io.BytesIO(pdf)).pages
    )
    squeezed = text.replace(" ", "")  # the address wraps across lines in the PDF
    assert f"provedbyatokenfromthetimestampauthority{timestamp_authority}" in squeezed


def test_without_a_timestamp_authority_the_report_says_so(report):
    import io

    from pypdf import PdfReader

    pdf = report_pdf(report)
    assert (
        signing.verify_pdf(pdf, organization_certificates(report.organization)).timestamped_at
        is None
    )
    text = " ".join(
        " ".join((p.extract_text() or "").split()) for p in PdfReader(io.BytesIO(pdf)).pages
    )
    assert "no timestamp authority is configured" in text
