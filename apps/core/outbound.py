"""Requests to addresses that users name (an organization's timestamp authority).

A server that POSTs wherever an administrator points it can be steered at what only it can
reach: the cache on the loopback, the cloud's metadata service, the private network
(server-side request forgery, OWASP A10). So an address a user names is accepted only if
every address its host resolves to is a public one:

- https only (plain http where the operator allows it: ``allow_http``);
- no loopback, link-local (the metadata services), private, shared (100.64/10),
  unspecified, multicast, reserved, documentation or benchmarking address, IPv4 or IPv6,
  including an IPv4 address inside an IPv6 one (mapped ``::ffff:a.b.c.d``, NAT64, 6to4,
  Teredo) and the old numeric spellings of IPv4 (``2130706433``, ``0x7f.1``, ``0177.0.0.1``);
- no metadata or internal host name, whatever it resolves to;
- except networks the operator names (``allowed_networks``: an in-house authority).

The same check runs when the address is saved and again when it is used, and the request
then goes to the address that was checked (no second lookup an attacker's DNS could answer
differently: no rebinding window), with the host name kept for TLS and ``Host``. Redirects
are never followed, and the whole exchange has a deadline and a size limit.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# Host names of cloud metadata services and names that are internal by definition.
METADATA_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.com",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.packet.net",
    }
)
INTERNAL_SUFFIXES = (".internal", ".local", ".localhost", ".localdomain", ".home.arpa", ".lan")
# Not public although Python's is_global says so (before Python 3.13): IETF protocol
# assignments (Oracle's metadata service is 192.0.0.192), the deprecated 6to4 relay anycast
# block and the local-use NAT64 prefix. IPv6 site-local (fec0::/10) is refused as private.
NOT_PUBLIC = (
    ipaddress.ip_network("192.0.0.0/24"),
    ipaddress.ip_network("192.88.99.0/24"),  # 6to4 relay anycast, deprecated (RFC 7526)
    ipaddress.ip_network("64:ff9b:1::/48"),
)
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class OutboundRefused(ValueError):
    """An address that may not be called, or a call that failed; the message says why."""


@dataclass(frozen=True)
class OutboundPolicy:
    allow_http: bool = False
    allowed_networks: tuple[Network, ...] = ()
    timeout: float = 10.0  # seconds for the whole exchange
    max_bytes: int = 1024 * 1024

    @classmethod
    def of(
        cls,
        *,
        allow_http: bool = False,
        allowed_networks: Iterable[str] = (),
        timeout: float = 10.0,
        max_bytes: int = 1024 * 1024,
    ) -> OutboundPolicy:
        return cls(
            allow_http=allow_http,
            allowed_networks=tuple(
                ipaddress.ip_network(str(n).strip(), strict=False) for n in allowed_networks
            ),
            timeout=float(timeout),
            max_bytes=int(max_bytes),
        )

    def permits(self, address: Address) -> bool:
        return any(address in network for network in self.allowed_networks)


@dataclass(frozen=True)
class Target:
    """A checked address: where to connect (``addresses``) and what to say (``host``)."""

    url: str
    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[str, ...] = field(default=())


def _embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def refusal(address: Address) -> str:
    """Why ``address`` is not a public address to call ("" when it is one)."""
    inner = _embedded_ipv4(address)
    if inner is not None:
        why = refusal(inner)
        return f"{why}: {inner}, carried inside an IPv6 address" if why else ""
    if address.is_loopback:
        return "a loopback address (this server itself)"
    if address.is_link_local:
        return "a link-local address (where cloud metadata services answer)"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private or (isinstance(address, ipaddress.IPv6Address) and address.is_site_local):
        return "a private-network address"
    if address.is_reserved or any(address in n for n in NOT_PUBLIC if n.version == address.version):
        return "a reserved address"
    if not address.is_global:
        return "a special-purpose address"
    return ""


_NUMERIC_HOST = re.compile(r"[0-9a-fx.]+", re.IGNORECASE)


def _literal(host: str) -> Address | None:
    """The address a host written as a number stands for; non-standard IPv4 spellings
    (decimal, octal, hexadecimal, shortened) are refused, not guessed."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _NUMERIC_HOST.fullmatch(host):
        try:
            packed = socket.inet_aton(host)
        except OSError:
            return None
        meant = ipaddress.IPv4Address(packed)
        raise OutboundRefused(
            f"the host '{host}' is an IPv4 address ({meant}) in a non-standard form; "
            "write addresses as names or in the usual a.b.c.d form"
        )
    return None


Resolver = Callable[..., Sequence[Any]]


def check_url(
    url: str, policy: OutboundPolicy, *, resolve: Resolver | None = None, what: str = "address"
) -> Target:
    """The target ``url`` names, with every address its host resolves to, if each may be
    called under ``policy``; ``OutboundRefused`` (saying why) otherwise."""
    resolve = resolve or socket.getaddrinfo
    text = url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise OutboundRefused(f"'{text}' is not a valid {what}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http"):
        raise OutboundRefused(f"'{text}' is not an https:// {what}")
    if scheme == "http" and not policy.allow_http:
        raise OutboundRefused(
            f"'{text}' is plain http; only https:// addresses are accepted (the operator "
            "may allow http with DEIDWEB_TSA_ALLOW_HTTP)"
        )
    if parts.username is not None or parts.password is not None:
        raise OutboundRefused(f"'{text}' carries a user name or password; remove them")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise OutboundRefused(f"'{text}' names no host")
    port = port or (443 if scheme == "https" else 80)
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    literal = _literal(host)
    if literal is None:
        # The name as the resolver reads it (IDNA: full-width letters, ideographic full
        # stops and case mapped), so that every check below sees what is looked up.
        try:
            host = host.encode("idna").decode("ascii").rstrip(".").lower()
        except UnicodeError:
            raise OutboundRefused(f"'{host}' is not a valid host name") from None
        if not host:
            raise OutboundRefused(f"'{text}' names no host")
        literal = _literal(host)
    if literal is None and (
        host in METADATA_HOSTS or host == "localhost" or host.endswith(INTERNAL_SUFFIXES)
    ):
        raise OutboundRefused(f"'{host}' is an internal or metadata host name, not a public {what}")
    candidates: list[Address] = []
    if literal is not None:
        candidates = [literal]
    else:
        try:
            answers = resolve(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise OutboundRefused(f"the host '{host}' could not be resolved") from None
        for answer in answers:
            text_address = str(answer[4][0]).split("%", 1)[0]
            candidates.append(ipaddress.ip_address(text_address))
        if not candidates:
            raise OutboundRefused(f"the host '{host}' could not be resolved")
    addresses: list[str] = []
    for address in candidates:
        if policy.permits(address):
            addresses.append(str(address))
            continue
        why = refusal(address)
        if why:
            shown = host if literal is not None else f"'{host}' resolves to {address}, which"
            raise OutboundRefused(f"{shown} is {why}; only public addresses are called")
        addresses.append(str(address))
    return Target(
        url=text,
        scheme=scheme,
        host=host,
        port=port,
        path=path,
        addresses=tuple(dict.fromkeys(addresses)),
    )


class _PinnedConnection(http.client.HTTPConnection):
    """HTTP(S) to the checked addresses only, never to a second lookup of the name.

    ``expire`` (called by a timer at the deadline) shuts the socket down whatever the
    exchange is doing — connecting, the TLS handshake, reading headers or body — so that a
    peer sending a byte now and then cannot stretch the deadline read by read."""

    def __init__(self, target: Target, timeout: float, deadline: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._target = target
        self._deadline = deadline
        self._raw: socket.socket | None = None
        self.expired = threading.Event()

    def expire(self) -> None:
        self.expired.set()
        for sock in (self._raw, self.sock):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def connect(self) -> None:
        failure: OSError | None = None
        for address in self._target.addresses:
            left = self._deadline - time.monotonic()
            if left <= 0 or self.expired.is_set():
                raise TimeoutError
            try:
                sock = socket.create_connection((address, self._target.port), left)
                break
            except OSError as exc:
                failure = exc
        else:
            raise OutboundRefused(
                f"{self._target.host} could not be reached ({failure or 'no address'})"
            )
        self._raw = sock
        if self.expired.is_set():
            sock.close()
            raise TimeoutError
        if self._target.scheme == "https":
            context = ssl.create_default_context()
            try:
                sock = context.wrap_socket(sock, server_hostname=self._target.host)
            except (OSError, ssl.SSLError) as exc:
                sock.close()
                if self.expired.is_set():
                    raise TimeoutError from None
                raise OutboundRefused(
                    f"the TLS connection to {self._target.host} failed ({exc})"
                ) from None
        self.sock = sock


def post(
    url: str,
    body: bytes,
    *,
    headers: dict[str, str],
    policy: OutboundPolicy,
    resolve: Resolver | None = None,
    what: str = "address",
) -> tuple[int, dict[str, str], bytes]:
    """POST ``body`` to ``url`` after checking it again; status, headers and body.

    A redirect is an error (never followed); so is an answer past ``policy.max_bytes`` or
    not finished within ``policy.timeout`` seconds."""
    target = check_url(url, policy, resolve=resolve, what=what)
    deadline = time.monotonic() + policy.timeout
    connection = _PinnedConnection(target, timeout=policy.timeout, deadline=deadline)
    timer = threading.Timer(policy.timeout, connection.expire)
    timer.daemon = True
    timer.start()
    try:
        try:
            connection.request("POST", target.path, body=body, headers=headers)
            response = connection.getresponse()
            if 300 <= response.status < 400:
                where = response.getheader("Location", "")
                raise OutboundRefused(
                    f"{target.host} answered with a redirect (HTTP {response.status}"
                    f"{' to ' + where if where else ''}); redirects are not followed"
                )
            chunks: list[bytes] = []
            size = 0
            while True:
                if time.monotonic() > deadline:
                    raise OutboundRefused(
                        f"{target.host} did not answer within {policy.timeout:g} s"
                    )
                chunk = response.read1(64 * 1024)
                if not chunk:
                    break
                size += len(chunk)
                if size > policy.max_bytes:
                    raise OutboundRefused(
                        f"{target.host} answered with more than {policy.max_bytes:,} bytes"
                    )
                chunks.append(chunk)
        except TimeoutError:
            raise OutboundRefused(
                f"{target.host} did not answer within {policy.timeout:g} s"
            ) from None
        except (OSError, http.client.HTTPException) as exc:
            if connection.expired.is_set():
                raise OutboundRefused(
                    f"{target.host} did not answer within {policy.timeout:g} s"
                ) from None
            raise OutboundRefused(f"the request to {target.host} failed ({exc})") from None
        return response.status, dict(response.getheaders()), b"".join(chunks)
    finally:
        timer.cancel()
        connection.close()
