"""Issue 23, item 10: what an organization may import as its signing identity. The import
accepted RSA-512 and RSA-1024 keys, MD5- and SHA-1-signed certificates, a certification
authority's certificate and a certificate issued to another organization.

Every certificate here is made by the test with ``cryptography`` (those the library no
longer makes — small RSA keys, MD5/SHA-1 signatures — assembled from their parts)."""

from __future__ import annotations

import datetime as dt
import math
import secrets

import pytest
from asn1crypto import x509 as asn1_x509
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, padding, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.audit.models import AuditEvent
from apps.core.errors import ApplicationError
from apps.reports import signing
from apps.reports.identity import organization_signing_import

pytestmark = pytest.mark.django_db
NOW = dt.datetime.now(dt.UTC)
PASSPHRASE = "s3cret-phrase"


# --------------------------------------------------------------------------- makers


def _is_probable_prime(n: int) -> bool:
    if n < 2 or any(n % p == 0 for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)):
        return n in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41):
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _prime(bits: int) -> int:
    while True:
        n = secrets.randbits(bits) | (1 << (bits - 1)) | (1 << (bits - 2)) | 1
        if _is_probable_prime(n):
            return n


def small_rsa_key(bits: int) -> rsa.RSAPrivateKey:
    """An RSA key of ``bits`` bits, below what ``cryptography`` generates (1024)."""
    e = 65537
    while True:
        p, q = _prime(bits // 2), _prime(bits // 2)
        phi = (p - 1) * (q - 1)
        if p == q or math.gcd(e, phi) != 1:
            continue
        d = pow(e, -1, phi)
        numbers = rsa.RSAPrivateNumbers(
            p,
            q,
            d,
            rsa.rsa_crt_dmp1(d, p),
            rsa.rsa_crt_dmq1(d, q),
            rsa.rsa_crt_iqmp(p, q),
            rsa.RSAPublicNumbers(e, p * q),
        )
        return numbers.private_key(unsafe_skip_rsa_key_validation=True)


def _name(common: str, organization: str | None) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    if organization is not None:
        parts.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(parts)


def _usage(*, sign: bool = True, cert_sign: bool = False) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=sign,
        content_commitment=sign,
        key_encipherment=not sign,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def certificate(
    key,  # type: ignore[no-untyped-def]
    *,
    organization: str | None = "Custodian",
    ca: bool = False,
    usage: x509.KeyUsage | None = None,
    with_usage: bool = True,
    digest: str = "sha256",
    purposes: list[x509.ObjectIdentifier] | None = None,
) -> x509.Certificate:
    name = _name("Custodian Privacy Office", organization)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - dt.timedelta(days=1))
        .not_valid_after(NOW + dt.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if with_usage:
        builder = builder.add_extension(usage or _usage(), critical=True)
    if purposes is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage(purposes), critical=False)
    edwards = not isinstance(
        key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | dsa.DSAPrivateKey
    )
    made = builder.sign(key, None if edwards else hashes.SHA256())
    if digest == "sha256":
        return made
    # cryptography no longer signs with MD5 or SHA-1: sign the same TBS certificate by hand.
    algorithm = {"md5": ("md5_rsa", hashes.MD5()), "sha1": ("sha1_rsa", hashes.SHA1())}[digest]
    parsed = asn1_x509.Certificate.load(made.public_bytes(serialization.Encoding.DER))
    tbs = parsed["tbs_certificate"].copy()
    tbs["signature"] = asn1_x509.SignedDigestAlgorithm({"algorithm": algorithm[0]})
    value = key.sign(tbs.dump(force=True), padding.PKCS1v15(), algorithm[1])
    rebuilt = asn1_x509.Certificate(
        {
            "tbs_certificate": tbs,
            "signature_algorithm": {"algorithm": algorithm[0]},
            "signature_value": value,
        }
    )
    return x509.load_der_x509_certificate(rebuilt.dump())


def bundle(key, cert: x509.Certificate, passphrase: str = PASSPHRASE) -> bytes:  # type: ignore[no-untyped-def]
    return pkcs12.serialize_key_and_certificates(
        b"signing", key, cert, None, serialization.BestAvailableEncryption(passphrase.encode())
    )


def rsa2048() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _case(name: str):  # type: ignore[no-untyped-def]
    if name == "rsa-512":
        key = small_rsa_key(512)
        return bundle(key, certificate(key))
    if name == "rsa-1024":
        key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
        return bundle(key, certificate(key))
    if name == "rsa-2046":
        key = small_rsa_key(2046)
        return bundle(key, certificate(key))
    if name in ("ec-p192", "ec-p224"):
        key = ec.generate_private_key(ec.SECP192R1() if name == "ec-p192" else ec.SECP224R1())
        return bundle(key, certificate(key))
    if name == "dsa-2048":
        key = dsa.generate_private_key(key_size=2048)
        return bundle(key, certificate(key))
    if name in ("md5", "sha1"):
        key = rsa2048()
        return bundle(key, certificate(key, digest=name))
    if name == "ca":
        # A CA certificate, even one whose key usage also allows signing documents.
        key = rsa2048()
        usage = _usage(sign=True, cert_sign=True)
        return bundle(key, certificate(key, ca=True, usage=usage))
    if name == "no-key-usage":
        key = rsa2048()
        return bundle(key, certificate(key, with_usage=False))
    if name == "encipherment-only":
        key = rsa2048()
        return bundle(key, certificate(key, usage=_usage(sign=False)))
    if name == "other-organization":
        key = rsa2048()
        return bundle(key, certificate(key, organization="Another Hospital"))
    if name == "no-organization":
        key = rsa2048()
        return bundle(key, certificate(key, organization=None))
    if name in ("ed25519", "ed448"):
        from cryptography.hazmat.primitives.asymmetric import ed448, ed25519

        kind = ed25519.Ed25519PrivateKey if name == "ed25519" else ed448.Ed448PrivateKey
        key = kind.generate()
        return bundle(key, certificate(key))
    if name in ("tls-server-only", "code-signing-only"):
        from cryptography.x509.oid import ExtendedKeyUsageOID

        purpose = {
            "tls-server-only": ExtendedKeyUsageOID.SERVER_AUTH,
            "code-signing-only": ExtendedKeyUsageOID.CODE_SIGNING,
        }[name]
        key = rsa2048()
        return bundle(key, certificate(key, purposes=[purpose]))
    raise AssertionError(name)


REFUSED = [
    ("rsa-512", "RSA-512 key; at least RSA-2048"),
    ("rsa-1024", "RSA-1024 key; at least RSA-2048"),
    ("rsa-2046", "RSA-2046 key; at least RSA-2048"),
    ("ec-p192", "secp192r1 (192 bits); at least P-256"),
    ("ec-p224", "secp224r1 (224 bits); at least P-256"),
    ("dsa-2048", "DSA key"),
    ("md5", "signed with MD5"),
    ("sha1", "signed with SHA-1"),
    ("ca", "certification authority's certificate"),
    ("no-key-usage", "does not say it may sign documents"),
    ("encipherment-only", "does not allow signing documents"),
    ("other-organization", "issued to 'Another Hospital', not to 'Custodian'"),
    ("no-organization", "names no organization (O=)"),
    # accepted, then every report failed: pyHanko signs these keys only with other digests
    ("ed25519", "could not sign a test report"),
    ("ed448", "could not sign a test report"),
    # an extended key usage limits the certificate to its purposes (RFC 5280, 4.2.1.12)
    ("tls-server-only", "extended key usage"),
    ("code-signing-only", "extended key usage"),
]


@pytest.mark.parametrize(("case", "reason"), REFUSED)
def test_a_bundle_that_should_not_sign_reports_is_refused(admin_user, custodian, case, reason):
    data = _case(case)
    before = (custodian.signing_certificate_path, custodian.signing_passphrase_sealed)
    with pytest.raises(ApplicationError) as refused:
        organization_signing_import(
            organization=custodian, user=admin_user, bundle=data, passphrase=PASSPHRASE
        )
    assert reason in refused.value.message, refused.value.message
    assert refused.value.message.startswith("The signing certificate was not imported:")
    custodian.refresh_from_db()
    assert (custodian.signing_certificate_path, custodian.signing_passphrase_sealed) == before
    assert not AuditEvent.objects.filter(action="organization.signing_imported").exists()


@pytest.mark.parametrize("curve", [ec.SECP256R1(), ec.SECP384R1()])
def test_strong_keys_issued_to_the_organization_are_imported_and_sign(admin_user, custodian, curve):
    """RSA-2048 and EC P-256 / P-384 under the organization's own name (compared without
    regard to case or spacing), and a report signed with each verifies."""
    from weasyprint import HTML

    for key, organization in (
        (rsa2048(), "Custodian"),
        (ec.generate_private_key(curve), " custodian "),
    ):
        data = bundle(key, certificate(key, organization=organization))
        described = organization_signing_import(
            organization=custodian, user=admin_user, bundle=data, passphrase=PASSPHRASE
        )
        assert "O=" in described["subject"]
        signed = signing.sign_pdf(
            HTML(string="<p>Signed after the import.</p>").write_pdf(),
            data,
            PASSPHRASE,
            reason="test",
            location="here",
            signer_name="Custodian",
        )
        check = signing.verify_pdf(signed, [certificate_pem(data)])
        assert check.valid, check.problem


def certificate_pem(data: bytes) -> bytes:
    return signing.certificate_pem(data, PASSPHRASE)


def test_a_nul_in_the_passphrase_is_a_message_not_a_crash(client_for, admin_user, custodian):
    """A NUL character in the passphrase made the PKCS#12 reader panic (a 500)."""
    key = rsa2048()
    data = bundle(key, certificate(key))
    with pytest.raises(signing.IdentityError, match="NUL character"):
        signing.check_identity(data, "s3cret\x00phrase", organization="Custodian")
    page = client_for(admin_user).post(
        reverse("organization-signing", kwargs={"org": custodian.slug}),
        {
            "action": "import",
            "passphrase": "s3cret\x00phrase",
            "bundle": SimpleUploadedFile("o.p12", data),
        },
    )
    assert page.status_code == 400
    assert "'passphrase' contains a NUL character" in page.content.decode()
    custodian.refresh_from_db()
    assert not AuditEvent.objects.filter(action="organization.signing_imported").exists()


def test_a_certificate_whose_purposes_include_document_signing_is_imported(admin_user, custodian):
    """An extended key usage that names e-mail protection (S/MIME, which document signing
    certificates carry) or document signing (RFC 9336) is accepted."""
    from cryptography.x509.oid import ExtendedKeyUsageOID

    for purposes in (
        [ExtendedKeyUsageOID.EMAIL_PROTECTION],
        [ExtendedKeyUsageOID.CLIENT_AUTH, x509.ObjectIdentifier("1.3.6.1.5.5.7.3.36")],
    ):
        key = rsa2048()
        described = organization_signing_import(
            organization=custodian,
            user=admin_user,
            bundle=bundle(key, certificate(key, purposes=purposes)),
            passphrase=PASSPHRASE,
        )
        assert "O=Custodian" in described["subject"]
