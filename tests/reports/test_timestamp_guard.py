"""Issue 23, item 3: the timestamp authority's address is not a way into the server's
network (SSRF). An administrator could save ``http://127.0.0.1:6379/``, the metadata address
and private ones, and the worker POSTed there and followed redirects.

Refused when saved and again when called: anything but https (unless the operator allows
http), and any host that is, or resolves to, a loopback, link-local, private, unspecified,
multicast, reserved or metadata address — in whatever spelling. The call goes to the address
checked (no second lookup), follows no redirect and has a deadline."""

from __future__ import annotations

import http.server
import io
import socket
import threading
from collections.abc import Iterator

import pytest
from django.urls import reverse

from apps.audit.models import AuditEvent
from apps.core import outbound
from apps.core.errors import ApplicationError
from apps.reports import identity, signing
from apps.reports.identity import organization_timestamp_url_set

pytestmark = pytest.mark.django_db

PUBLIC = "93.184.216.34"  # a public address; no test connects to it

INTERNAL = [
    ("https://127.0.0.1:6379/", "loopback"),
    ("https://169.254.169.254/latest/meta-data/", "link-local"),
    ("https://10.0.0.1/tsr", "private-network"),
    ("https://172.16.5.4/tsr", "private-network"),
    ("https://192.168.1.1/tsr", "private-network"),
    ("https://[::1]/tsr", "loopback"),
    ("https://[fe80::1]/tsr", "link-local"),
    ("https://[fd00:ec2::254]/", "private-network"),
    ("https://[::ffff:127.0.0.1]/", "loopback"),
    ("https://[::ffff:169.254.169.254]/", "link-local"),
    ("https://[64:ff9b::a9fe:a9fe]/", "link-local"),
    ("https://[2002:7f00:1::]/", "loopback"),
    ("https://0.0.0.0/", "unspecified"),
    ("https://[::]/", "unspecified"),
    ("https://224.0.0.1/", "multicast"),
    ("https://[ff02::1]/", "multicast"),
    ("https://240.0.0.1/", "private-network"),
    ("https://100.100.100.200/", "special-purpose"),
    ("https://192.0.0.192/", "reserved"),
    ("https://2130706433/", "non-standard form"),
    ("https://0x7f.0.0.1/", "non-standard form"),
    ("https://0177.0.0.1/", "non-standard form"),
    ("https://127.1/", "non-standard form"),
    ("https://localhost/tsr", "internal or metadata host name"),
    ("https://metadata.google.internal/computeMetadata/v1/", "internal or metadata host name"),
    ("https://metadata/", "internal or metadata host name"),
    ("https://instance-data/", "internal or metadata host name"),
    ("https://tsa.corp.internal/", "internal or metadata host name"),
    ("http://127.0.0.1:6379/", "plain http"),
    ("http://tsa.example.org/tsr", "plain http"),
    ("ftp://tsa.example.org/", "is not an https:// timestamp authority"),
    ("https://user:secret@tsa.example.org/", "user name or password"),
    # IPv6 site-local (fec0::/10, deprecated but routed inside networks that still use it)
    ("https://[fec0::1]/", "private-network"),
    ("https://[feff:ffff::1]/", "private-network"),
    # the 6to4 relay anycast block (deprecated, RFC 7526): no authority lives there
    ("https://192.88.99.1/", "reserved"),
    # host names written with full-width letters or ideographic full stops are the same
    # names once IDNA has mapped them (what the resolver is asked)
    (
        "https://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/",
        "internal or metadata host name",
    ),
    ("https://metadata.google.internal\u3002/", "internal or metadata host name"),
    ("https://\uff11\uff12\uff17.0.0.1/", "loopback"),
]


def fake_dns(answers: dict[str, list[str]], calls: list[str] | None = None):  # type: ignore[no-untyped-def]
    """A resolver answering ``answers`` (name → addresses), and the loopback for the test's
    own servers; every other name is unknown."""
    real = socket.getaddrinfo

    def resolve(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
        if calls is not None:
            calls.append(host)
        if host in answers:
            return [
                (
                    socket.AF_INET6 if ":" in a else socket.AF_INET,
                    socket.SOCK_STREAM,
                    6,
                    "",
                    (a, port),
                )
                for a in answers[host]
            ]
        if host in ("127.0.0.1", "::1"):
            return real(host, port, *args, **kwargs)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    return resolve


@pytest.mark.parametrize(("url", "reason"), INTERNAL)
def test_an_internal_address_is_not_saved(admin_user, custodian, url, reason):
    with pytest.raises(ApplicationError) as refused:
        organization_timestamp_url_set(organization=custodian, user=admin_user, url=url)
    message = refused.value.message
    assert reason in message, message
    custodian.refresh_from_db()
    assert custodian.signing_timestamp_url == ""
    assert not AuditEvent.objects.filter(action="organization.timestamp_url").exists()


@pytest.mark.parametrize(
    ("addresses", "shown"),
    [
        (["10.1.2.3"], "resolves to 10.1.2.3, which is a private-network address"),
        (["127.0.0.53"], "resolves to 127.0.0.53, which is a loopback address"),
        (["169.254.169.254"], "resolves to 169.254.169.254, which is a link-local address"),
        (["::1"], "resolves to ::1, which is a loopback address"),
        (["::ffff:10.0.0.1"], "private-network address: 10.0.0.1"),
        # one good address is not enough: a client may connect to any of them
        ([PUBLIC, "10.9.9.9"], "resolves to 10.9.9.9, which is a private-network address"),
    ],
)
def test_a_name_resolving_to_an_internal_address_is_not_saved(
    admin_user, custodian, monkeypatch, addresses, shown
):
    monkeypatch.setattr(socket, "getaddrinfo", fake_dns({"tsa.example.net": addresses}))
    with pytest.raises(ApplicationError) as refused:
        organization_timestamp_url_set(
            organization=custodian, user=admin_user, url="https://tsa.example.net/tsr"
        )
    assert shown in refused.value.message
    custodian.refresh_from_db()
    assert custodian.signing_timestamp_url == ""


def test_a_public_https_authority_is_saved_and_http_only_where_the_operator_allows(
    admin_user, custodian, monkeypatch, settings
):
    monkeypatch.setattr(socket, "getaddrinfo", fake_dns({"tsa.example.net": [PUBLIC]}))
    organization_timestamp_url_set(
        organization=custodian, user=admin_user, url="https://tsa.example.net/tsr"
    )
    custodian.refresh_from_db()
    assert custodian.signing_timestamp_url == "https://tsa.example.net/tsr"
    with pytest.raises(ApplicationError, match="plain http"):
        organization_timestamp_url_set(
            organization=custodian, user=admin_user, url="http://tsa.example.net/tsr"
        )
    settings.DEIDWEB_TSA_ALLOW_HTTP = True
    organization_timestamp_url_set(
        organization=custodian, user=admin_user, url="http://tsa.example.net/tsr"
    )
    custodian.refresh_from_db()
    assert custodian.signing_timestamp_url == "http://tsa.example.net/tsr"
    # An in-house authority on a private network: only in the networks the operator names.
    monkeypatch.setattr(socket, "getaddrinfo", fake_dns({"tsa.example.net": ["10.2.0.7"]}))
    with pytest.raises(ApplicationError, match="private-network"):
        organization_timestamp_url_set(
            organization=custodian, user=admin_user, url="https://tsa.example.net/tsr"
        )
    settings.DEIDWEB_TSA_ALLOWED_NETWORKS = ["10.2.0.0/24"]
    organization_timestamp_url_set(
        organization=custodian, user=admin_user, url="https://tsa.example.net/tsr"
    )
    with pytest.raises(ApplicationError, match="private-network"):
        organization_timestamp_url_set(
            organization=custodian, user=admin_user, url="https://10.2.1.7/tsr"
        )


def test_the_signing_page_shows_the_refusal(client_for, admin_user, custodian):
    page = client_for(admin_user).post(
        reverse("organization-signing", kwargs={"org": custodian.slug}),
        {"action": "timestamp", "timestamp_url": "https://169.254.169.254/latest/meta-data/"},
        follow=True,
    )
    assert page.status_code == 200
    text = page.content.decode()
    assert "The timestamp authority was not saved" in text
    assert "link-local address" in text
    custodian.refresh_from_db()
    assert custodian.signing_timestamp_url == ""


# --------------------------------------------------------------------------- when called


def _pdf() -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _sign(url: str) -> bytes:
    bundle, passphrase, _pem = signing.create_signing_identity("Signer", "Custodian")
    return signing.sign_pdf(
        _pdf(),
        bundle,
        passphrase,
        reason="test",
        location="here",
        signer_name="Custodian",
        timestamp_url=url,
        timestamp_policy=identity.timestamp_policy(),
    )


@pytest.fixture
def listener() -> Iterator[tuple[int, list[int]]]:
    """A TCP port that counts the connections made to it (and answers nothing)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    accepted: list[int] = []
    stop = threading.Event()

    def run() -> None:
        held = []
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            accepted.append(1)
            held.append(connection)
        for c in held:
            c.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join(2)
    server.close()


def test_an_address_stored_earlier_is_checked_again_when_called(listener, settings):
    """A row saved before the check (or edited in the database) is refused by the worker:
    nothing connects to the loopback."""
    port, accepted = listener
    settings.DEIDWEB_TSA_ALLOW_HTTP = True  # even with http allowed, the loopback is not
    with pytest.raises(signing.TimestampError) as refused:
        _sign(f"http://127.0.0.1:{port}/")
    assert "is a loopback address" in str(refused.value)
    assert accepted == []


def test_dns_rebinding_finds_the_internal_address_when_called(monkeypatch, settings):
    """Public when saved, the loopback when the worker calls: refused before connecting."""
    monkeypatch.setattr(socket, "getaddrinfo", fake_dns({"tsa.example.net": [PUBLIC]}))
    outbound.check_url("https://tsa.example.net/tsr", identity.timestamp_policy())
    monkeypatch.setattr(socket, "getaddrinfo", fake_dns({"tsa.example.net": ["127.0.0.1"]}))
    connected: list[object] = []
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: connected.append(a))
    with pytest.raises(signing.TimestampError, match="resolves to 127.0.0.1, which is a loopback"):
        _sign("https://tsa.example.net/tsr")
    assert connected == []


def test_the_connection_goes_to_the_address_checked(monkeypatch):
    """One lookup per call: the address checked is the one connected to, so a DNS answer
    that changes between the check and the connection cannot redirect it."""
    answers = iter([[PUBLIC], ["127.0.0.1"], ["127.0.0.1"]])
    lookups: list[str] = []

    def changing(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
        return fake_dns({host: next(answers)}, lookups)(host, port, *args, **kwargs)

    connected: list[tuple[str, int]] = []

    def connect(address, timeout=None, *args, **kwargs):  # type: ignore[no-untyped-def]
        connected.append(address)
        raise ConnectionRefusedError("refused by the test")

    monkeypatch.setattr(socket, "getaddrinfo", changing)
    monkeypatch.setattr(socket, "create_connection", connect)
    with pytest.raises(outbound.OutboundRefused, match="could not be reached"):
        outbound.post(
            "https://tsa.example.net/tsr",
            b"request",
            headers={},
            policy=outbound.OutboundPolicy.of(),
        )
    assert lookups == ["tsa.example.net"]
    assert connected == [(PUBLIC, 443)]


class _Redirecting(http.server.BaseHTTPRequestHandler):
    target = ""

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(307)
        self.send_header("Location", self.target)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_redirects_are_not_followed(listener, settings):
    """An allowed authority that answers 307 to somewhere else: the signing stops there."""
    port, accepted = listener
    settings.DEIDWEB_TSA_ALLOW_HTTP = True
    settings.DEIDWEB_TSA_ALLOWED_NETWORKS = ["127.0.0.0/8"]

    class Handler(_Redirecting):
        target = f"http://127.0.0.1:{port}/stolen"

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(signing.TimestampError) as refused:
            _sign(f"http://127.0.0.1:{server.server_address[1]}/tsr")
    finally:
        server.shutdown()
        server.server_close()
    assert "answered with a redirect (HTTP 307" in str(refused.value)
    assert "redirects are not followed" in str(refused.value)
    assert accepted == []


def test_a_silent_authority_fails_the_signing_at_the_deadline(listener, settings):
    port, accepted = listener
    settings.DEIDWEB_TSA_ALLOW_HTTP = True
    settings.DEIDWEB_TSA_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.DEIDWEB_TSA_TIMEOUT_SECONDS = 1
    with pytest.raises(signing.TimestampError, match="did not answer within 1 s"):
        _sign(f"http://127.0.0.1:{port}/tsr")
    assert accepted == [1]


def test_the_report_job_fails_with_the_reason(decided, monkeypatch, custodian):
    """A report whose organization names an internal authority is not signed; the job says
    why and who must act."""
    from apps.jobs import kinds as job_kinds
    from apps.jobs.claiming import job_execute
    from apps.jobs.queueing import job_create
    from apps.reports.models import Report

    custodian.signing_timestamp_url = "https://169.254.169.254/latest/"
    custodian.save(update_fields=["signing_timestamp_url"])
    monkeypatch.setitem(
        job_kinds.JOB_HANDLERS, "report", "apps.reports.jobs.report_generate_handler"
    )
    job = job_create(
        organization=custodian,
        kind="report",
        subject=f"assessments.assessment:{decided.assessment_id}",
        params={"decision_id": str(decided.id)},
        enqueue=False,
    )
    job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert job.status == "failed"
    assert "169.254.169.254 is a link-local address" in job.error
    assert "an administrator must correct the address" in job.error
    assert not Report.objects.filter(decision=decided).exists()


def test_a_name_is_judged_as_the_resolver_reads_it(admin_user, custodian, monkeypatch, settings):
    """An in-house network the operator allows does not let an internal *name* through in
    another spelling: ``tsa.corp.ｉｎｔｅｒｎａｌ`` is what the resolver reads as
    ``tsa.corp.internal``, refused whatever it resolves to."""
    settings.DEIDWEB_TSA_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    monkeypatch.setattr(socket, "getaddrinfo", fake_dns({"tsa.corp.internal": ["10.0.0.5"]}))
    for spelling in (
        "tsa.corp.internal",
        "tsa.corp.\uff49\uff4e\uff54\uff45\uff52\uff4e\uff41\uff4c",
        "TSA.CORP.INTERNAL\uff0e",
    ):
        with pytest.raises(ApplicationError, match="internal or metadata host name"):
            organization_timestamp_url_set(
                organization=custodian, user=admin_user, url=f"https://{spelling}/tsr"
            )


@pytest.fixture
def dripping() -> Iterator[int]:
    """An HTTP server that answers a status line, then a header one character every 0.2 s,
    for ever (each read is quick: only the whole exchange is slow)."""
    import time

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    stop = threading.Event()

    def run() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(1)
                try:
                    connection.recv(65536)
                    connection.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                    while not stop.is_set():
                        connection.sendall(b"y")
                        time.sleep(0.2)
                except OSError:
                    pass

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(3)
    server.close()


def test_an_authority_that_answers_drop_by_drop_fails_at_the_deadline(dripping):
    """The deadline holds for the whole exchange, headers included — not per read: a
    server sending a byte now and then would otherwise hold the worker for as long as it
    likes."""
    import time

    policy = outbound.OutboundPolicy.of(
        allow_http=True, allowed_networks=["127.0.0.1/32"], timeout=1
    )
    started = time.monotonic()
    with pytest.raises(outbound.OutboundRefused, match="did not answer within 1 s"):
        outbound.post(f"http://127.0.0.1:{dripping}/tsr", b"request", headers={}, policy=policy)
    assert time.monotonic() - started < 2.5
