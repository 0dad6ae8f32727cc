"""Signing identities and PAdES signatures for Step 9 reports (no Django here).

Each organization signs its reports with its own self-signed certificate. A reader checks a
report against the certificates the organization holds: the signature must be intact (not
one byte of the signed revision changed), cover the whole file (nothing appended), and come
from a trusted certificate. An organization may replace its self-signed identity by a
certificate issued by a certification authority (a PKCS#12 bundle it imports). When a
timestamp authority (RFC 3161) is configured, each signature carries a token from it that
proves when it was made (PAdES B-T); without one, the signing time is the server's clock and
no network is used. No revocation is fetched.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import io
import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from apps.core.outbound import OutboundPolicy, OutboundRefused
from apps.core.outbound import post as outbound_post

logger = logging.getLogger(__name__)

SIGNATURE_FIELD = "deidweb-signature"
T = TypeVar("T")


def _blocking(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """pyHanko's synchronous calls start their own event loop (asyncio.run), which fails in a
    thread that already runs one (an async view, a test driving a browser). There, the call
    runs in a worker thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return call(*args, **kwargs)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(call, *args, **kwargs).result()


@dataclass(frozen=True)
class SignatureCheck:
    """What a reader needs to know about a signed report."""

    signed: bool
    valid: bool  # intact, covering the whole file, and from a trusted certificate
    intact: bool
    trusted: bool
    signer: str = ""
    signed_at: dt.datetime | None = None
    problem: str = ""
    timestamped_at: dt.datetime | None = None  # from a timestamp authority's token, if any


# --------------------------------------------------------------------------- identity


def create_signing_identity(
    common_name: str, organization: str, *, days: int = 3650
) -> tuple[bytes, str, bytes]:
    """A new RSA-2048 key and a self-signed certificate for signing documents.

    Returns the PKCS#12 bundle (key and certificate, encrypted with a random passphrase),
    the passphrase, and the certificate in PEM form (public: anyone may hold it to verify)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64] or "deidweb"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization[:64] or "deidweb"),
        ]
    )
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=True,  # nonRepudiation
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    passphrase = secrets.token_urlsafe(32)
    bundle = pkcs12.serialize_key_and_certificates(
        name=common_name.encode()[:64],
        key=key,
        cert=certificate,
        cas=None,
        encryption_algorithm=serialization.BestAvailableEncryption(passphrase.encode()),
    )
    return bundle, passphrase, certificate.public_bytes(serialization.Encoding.PEM)


def certificate_of(pkcs12_bytes: bytes, passphrase: str) -> x509.Certificate:
    _key, certificate, _others = pkcs12.load_key_and_certificates(pkcs12_bytes, passphrase.encode())
    if certificate is None:
        raise ValueError("The PKCS#12 bundle holds no certificate.")
    return certificate


def certificate_pem(pkcs12_bytes: bytes, passphrase: str) -> bytes:
    return certificate_of(pkcs12_bytes, passphrase).public_bytes(serialization.Encoding.PEM)


def describe_certificate(pem: bytes) -> dict[str, str]:
    """Subject, validity and SHA-256 fingerprint, for people comparing certificates."""
    certificate = x509.load_pem_x509_certificate(pem)
    fingerprint = certificate.fingerprint(hashes.SHA256()).hex().upper()
    return {
        "subject": certificate.subject.rfc4514_string(),
        "issuer": certificate.issuer.rfc4514_string(),
        "sha256": ":".join(fingerprint[i : i + 2] for i in range(0, len(fingerprint), 2)),
        "not_before": certificate.not_valid_before_utc.isoformat(),
        "not_after": certificate.not_valid_after_utc.isoformat(),
    }


# --------------------------------------------------------------------------- sign


class IdentityError(ValueError):
    """An imported PKCS#12 bundle that cannot sign reports (the message says why)."""


MIN_RSA_BITS = 2048
MIN_EC_BITS = 256  # P-256
WEAK_DIGESTS = {"md2": "MD2", "md4": "MD4", "md5": "MD5", "sha1": "SHA-1"}
# Extended key usages that allow signing documents (RFC 5280 4.2.1.12: when the extension is
# there, the certificate is for its purposes only): any purpose, e-mail protection (S/MIME,
# which document signing certificates carry), document signing (RFC 9336), Adobe's and
# Microsoft's document signing.
DOCUMENT_SIGNING_PURPOSES = frozenset(
    {
        x509.ObjectIdentifier("2.5.29.37.0"),
        x509.ObjectIdentifier("1.3.6.1.5.5.7.3.4"),
        x509.ObjectIdentifier("1.3.6.1.5.5.7.3.36"),
        x509.ObjectIdentifier("1.2.840.113583.1.1.5"),
        x509.ObjectIdentifier("1.3.6.1.4.1.311.10.3.12"),
    }
)


def _squeezed(text: str) -> str:
    return " ".join(text.split()).casefold()


def _key_strength_problem(public: object) -> str:
    from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519

    if isinstance(public, rsa.RSAPublicKey):
        if public.key_size < MIN_RSA_BITS:
            return (
                f"its key is an RSA-{public.key_size} key; at least RSA-{MIN_RSA_BITS} is "
                "required (NIST SP 800-57)"
            )
        return ""
    if isinstance(public, ec.EllipticCurvePublicKey):
        if public.curve.key_size < MIN_EC_BITS:
            return (
                f"its key is on the elliptic curve {public.curve.name} "
                f"({public.curve.key_size} bits); at least P-256 is required"
            )
        return ""
    if isinstance(public, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey):
        return ""
    if isinstance(public, dsa.DSAPublicKey):
        return "its key is a DSA key, which signatures no longer use; use RSA or EC"
    return "its key is of a kind that cannot sign reports; use RSA or EC"


def check_identity(
    pkcs12_bytes: bytes,
    passphrase: str,
    *,
    organization: str | None = None,
    now: dt.datetime | None = None,
) -> bytes:
    """Check an organization's PKCS#12 bundle before it is used to sign: it opens with the
    passphrase, holds a private key and its certificate, the certificate is valid now, is an
    end-entity certificate that may sign documents, with a key of at least RSA-2048 or P-256
    and a signature without MD5 or SHA-1, issued to ``organization`` (its subject's O=, when
    given). Returns the certificate (PEM)."""
    if "\x00" in passphrase:
        raise IdentityError("The passphrase contains a NUL character, which no passphrase has.")
    try:
        key, certificate, _ = pkcs12.load_key_and_certificates(
            pkcs12_bytes, passphrase.encode() or None
        )
    except ValueError:
        raise IdentityError(
            "The file is not a PKCS#12 bundle (.p12 / .pfx), or the passphrase is wrong."
        ) from None
    if key is None or certificate is None:
        raise IdentityError("The bundle must hold a private key and its certificate.")
    public = certificate.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    mine = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    if public != mine:
        raise IdentityError("The private key does not belong to the certificate in the bundle.")
    moment = now or dt.datetime.now(dt.UTC)
    if not certificate.not_valid_before_utc <= moment <= certificate.not_valid_after_utc:
        raise IdentityError(
            f"The certificate is valid from {certificate.not_valid_before_utc:%Y-%m-%d} to "
            f"{certificate.not_valid_after_utc:%Y-%m-%d}, not today."
        )
    weak_key = _key_strength_problem(certificate.public_key())
    if weak_key:
        raise IdentityError(f"The certificate cannot sign reports: {weak_key}.")
    try:
        digest = certificate.signature_hash_algorithm
    except Exception:  # an algorithm this library does not know: not one to trust
        raise IdentityError(
            "The certificate is signed with an algorithm that is not accepted; ask for one "
            "signed with SHA-256 or stronger."
        ) from None
    if digest is not None and digest.name in WEAK_DIGESTS:
        raise IdentityError(
            f"The certificate is signed with {WEAK_DIGESTS[digest.name]}, which can be forged; "
            "ask for one signed with SHA-256 or stronger."
        )
    try:
        constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints).value
    except x509.ExtensionNotFound:
        constraints = None
    if constraints is not None and constraints.ca:
        raise IdentityError(
            "This is a certification authority's certificate (basic constraints CA=true), "
            "not one for signing documents; import the certificate the authority issued to "
            "the organization."
        )
    try:
        usage = certificate.extensions.get_extension_for_class(x509.KeyUsage).value
    except x509.ExtensionNotFound:
        raise IdentityError(
            "The certificate's key usage does not say it may sign documents (no key usage "
            "extension with digitalSignature or nonRepudiation)."
        ) from None
    if not (usage.digital_signature or usage.content_commitment):
        raise IdentityError("The certificate's key usage does not allow signing documents.")
    try:
        purposes = set(certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
    except x509.ExtensionNotFound:
        purposes = None
    if purposes is not None and not purposes & DOCUMENT_SIGNING_PURPOSES:
        named = ", ".join(sorted(getattr(p, "_name", p.dotted_string) for p in purposes))
        raise IdentityError(
            f"The certificate's extended key usage limits it to {named}, not to signing "
            "documents; ask for one whose purposes include document signing or e-mail "
            "protection."
        )
    if organization is not None:
        names = [
            str(a.value)
            for a in certificate.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
        ]
        if not names:
            raise IdentityError(
                f"The certificate's subject names no organization (O=); it must name "
                f"'{organization}', whose reports it signs."
            )
        if any(_squeezed(n) != _squeezed(organization) for n in names):
            others = ", ".join(f"'{n}'" for n in names)
            raise IdentityError(
                f"The certificate is issued to {others}, not to '{organization}', whose "
                "reports it would sign."
            )
    pem = certificate.public_bytes(serialization.Encoding.PEM)
    _trial_signature(pkcs12_bytes, passphrase, pem, kind=type(key).__name__)
    return pem


def _trial_signature(pkcs12_bytes: bytes, passphrase: str, pem: bytes, *, kind: str) -> None:
    """Sign a one-page document as reports are signed, and verify it: a bundle this service
    cannot sign with (a key pyHanko signs only with another digest, a mechanism it lacks) is
    refused at import, not found out when every report fails."""
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(width=72, height=72)
    document = io.BytesIO()
    writer.write(document)
    try:
        signed = sign_pdf(
            document.getvalue(),
            pkcs12_bytes,
            passphrase,
            reason="import check",
            location="",
            signer_name="",
        )
    except Exception as exc:
        shown = kind.removeprefix("_").removesuffix("PrivateKey")
        raise IdentityError(
            f"its key ({shown}) could not sign a test report ({exc}); use an RSA or EC key"
        ) from None
    check = verify_pdf(signed, [pem])
    if not check.valid:
        raise IdentityError(f"a test report it signed does not verify ({check.problem})")


class TimestampError(RuntimeError):
    """The timestamp authority could not be called or gave no usable token (says why)."""


def _timestamper(url: str, policy: OutboundPolicy) -> Any:
    """An RFC 3161 client whose every request goes through ``apps.core.outbound``: the
    address is checked again when called (public addresses only, unless the operator allows
    others), the connection goes to the address checked, redirects are not followed, and
    the exchange has a deadline."""
    from asn1crypto import tsp
    from pyhanko.sign.timestamps import TimeStamper
    from pyhanko.sign.timestamps.common_utils import set_tsp_headers

    class GuardedTimeStamper(TimeStamper):
        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]  # pyHanko's is untyped

        async def async_request_tsa_response(self, req: Any) -> Any:
            def call() -> Any:
                status, headers, body = outbound_post(
                    url,
                    req.dump(),
                    headers=set_tsp_headers({}),
                    policy=policy,
                    what="timestamp authority",
                )
                kind = {k.lower(): v for k, v in headers.items()}.get("content-type", "")
                if status != 200 or kind.split(";")[0].strip() != "application/timestamp-reply":
                    raise OutboundRefused(
                        f"it answered HTTP {status} ({kind or 'no content type'}), not a "
                        "timestamp reply"
                    )
                return tsp.TimeStampResp.load(body)

            return await asyncio.to_thread(call)

    return GuardedTimeStamper()


def _refusal_in(exc: BaseException) -> OutboundRefused | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, OutboundRefused):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def sign_pdf(
    pdf: bytes,
    pkcs12: bytes,
    passphrase: str,
    *,
    reason: str,
    location: str,
    signer_name: str,
    timestamp_url: str = "",
    timestamp_policy: OutboundPolicy | None = None,
) -> bytes:
    """Sign a PDF (PAdES baseline B-B, SHA-256; B-T with a token from ``timestamp_url``,
    called under ``timestamp_policy``) as an incremental update, in an invisible field named
    ``deidweb-signature``. ``TimestampError`` when the authority cannot be used."""
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.sign import fields, signers

    signer = signers.SimpleSigner.load_pkcs12_data(
        pkcs12, other_certs=[], passphrase=passphrase.encode()
    )
    timestamper = (
        _timestamper(timestamp_url, timestamp_policy or OutboundPolicy()) if timestamp_url else None
    )
    writer = IncrementalPdfFileWriter(io.BytesIO(pdf), strict=False)
    metadata = signers.PdfSignatureMetadata(
        field_name=SIGNATURE_FIELD,
        subfilter=fields.SigSeedSubFilter.PADES,
        md_algorithm="sha256",
        reason=reason,
        location=location,
        name=signer_name,
    )
    try:
        output = _blocking(
            signers.sign_pdf, writer, metadata, signer=signer, timestamper=timestamper
        )
    except Exception as exc:
        refused = _refusal_in(exc)
        if refused is None:
            raise
        raise TimestampError(
            f"The timestamp authority {timestamp_url} was not used: {refused}."
        ) from None
    signed: bytes = output.getvalue()
    return signed


# --------------------------------------------------------------------------- verify


def _load_certificates(certificates: Sequence[bytes]) -> list[object]:
    from asn1crypto import pem as asn1_pem
    from asn1crypto import x509 as asn1_x509

    loaded = []
    for data in certificates:
        if not data:
            continue
        try:
            if asn1_pem.detect(data):
                for _type, _headers, der in asn1_pem.unarmor(data, multiple=True):
                    loaded.append(asn1_x509.Certificate.load(der))
            else:
                loaded.append(asn1_x509.Certificate.load(data))
        except Exception:  # an unreadable certificate is simply not trusted
            logger.warning("ignoring an unreadable trusted certificate")
    return loaded


def _signer_name(certificate: object) -> str:
    try:
        subject = certificate.subject.native  # type: ignore[attr-defined]
    except Exception:
        return ""
    common = subject.get("common_name", "")
    org = subject.get("organization_name", "")
    if common and org and common != org:
        return f"{common} ({org})"
    return str(common or org)


def _failed(problem: str, **fields: object) -> SignatureCheck:
    values: dict[str, object] = {"signed": False, "valid": False, "intact": False, "trusted": False}
    values.update(fields)
    return SignatureCheck(problem=problem, **values)  # type: ignore[arg-type]


def verify_pdf(pdf: bytes, trusted_certificates: Sequence[bytes]) -> SignatureCheck:
    """Check a report's signature against the certificates the organization holds.

    Never raises: a damaged or foreign file gives ``valid=False`` with the reason."""
    try:
        return _verify(pdf, trusted_certificates)
    except Exception as exc:  # a hostile or broken upload must not become a traceback
        logger.info("signature check failed: %s: %s", type(exc).__name__, exc)
        return _failed(
            "The file could not be checked: it is damaged or not a PDF this service signed."
        )


def _verify(pdf: bytes, trusted_certificates: Sequence[bytes]) -> SignatureCheck:
    from pyhanko.pdf_utils.reader import PdfFileReader
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko.sign.validation.status import SignatureCoverageLevel
    from pyhanko_certvalidator import ValidationContext

    if not pdf or not pdf.lstrip()[:5].startswith(b"%PDF-"):
        return _failed("The file is not a PDF.")
    try:
        reader = PdfFileReader(io.BytesIO(pdf), strict=False)
        embedded = list(reader.embedded_signatures)
    except Exception:
        return _failed("The PDF could not be read: it is damaged or was changed after signing.")
    if not embedded:
        return _failed("No signature found: the PDF is not signed.")
    ours = [s for s in embedded if s.field_name == SIGNATURE_FIELD]
    signature = (ours or embedded)[-1]
    roots = _load_certificates(trusted_certificates)
    context = ValidationContext(
        trust_roots=roots, allow_fetching=False, revocation_mode="soft-fail"
    )
    try:
        # Any revision after the signature makes the report invalid (checked by coverage
        # below), so pyHanko's analysis of which later changes would be harmless is skipped.
        status = _blocking(
            validate_pdf_signature, signature, signer_validation_context=context, skip_diff=True
        )
    except Exception:
        return _failed(
            "The signature could not be validated: the document was changed after signing "
            "or the signature is damaged.",
            signed=True,
        )
    signer = _signer_name(status.signing_cert)
    signed_at = status.signer_reported_dt
    intact = bool(status.intact and status.valid)
    whole_file = status.coverage == SignatureCoverageLevel.ENTIRE_FILE
    trusted = bool(status.trusted)
    problem = ""
    if not intact:
        problem = (
            "The document was changed after signing: its content no longer matches the signature."
        )
    elif not whole_file:
        problem = "The document was changed after signing: content was added after the signature."
    elif not trusted:
        problem = "The report was signed by a certificate this organization does not hold."
    stamp = getattr(status, "timestamp_validity", None)
    return SignatureCheck(
        signed=True,
        valid=intact and whole_file and trusted,
        intact=intact and whole_file,
        trusted=trusted,
        signer=signer,
        signed_at=signed_at,
        problem=problem,
        timestamped_at=stamp.timestamp if stamp is not None and stamp.intact else None,
    )
