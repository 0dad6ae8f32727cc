"""Issue 23, item 5: the failed-API-key throttle. With a rotating ``X-Forwarded-For``, 200
wrong keys were none of them throttled; without it, after 19 failures from one address the
valid keys of other users at that address got 429; and each failure wrote a permanent audit
row (200 requests, 200 rows).

Now: the client's address is the one the trusted proxies saw (``DEIDWEB_PROXY_COUNT``, as the
sign-in lockout counts it), never a header the client writes; failures are counted per
address and per key prefix; a valid key is never refused for others' failures; and repeated
failures are recorded as a few aggregated events, not one row each."""

from __future__ import annotations

import random

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.throttling import SimpleRateThrottle

from apps.audit.models import AuditEvent
from apps.audit.services import audit_verify
from tests.accounts.test_api_tokens import bearer, new_key

pytestmark = pytest.mark.django_db
URL = "/api/v1/datasets/"


@pytest.fixture
def limited(monkeypatch):  # type: ignore[no-untyped-def]
    """20 failed authentications an hour (the production default); other rates lifted."""
    cache.clear()
    monkeypatch.setattr(
        SimpleRateThrottle,
        "THROTTLE_RATES",
        {"anon": "10000/minute", "user": "10000/minute", "auth": "20/hour"},
    )
    yield
    cache.clear()


def _rotating(rng: random.Random) -> str:
    return ".".join(str(rng.randrange(1, 255)) for _ in range(4))


def test_a_rotating_forwarded_for_header_does_not_escape_the_throttle(limited, custodian):
    rng = random.Random(5)
    attacker = Client(REMOTE_ADDR="198.51.100.7")
    statuses = [
        attacker.get(
            URL, HTTP_X_FORWARDED_FOR=_rotating(rng), **bearer(f"deid_{rng.getrandbits(64):x}")
        ).status_code
        for _ in range(200)
    ]
    assert statuses == [401] * 20 + [429] * 180


def test_behind_a_proxy_only_the_address_it_appends_counts(limited, custodian, settings):
    """One trusted proxy: the client may write any X-Forwarded-For, the proxy appends the
    address it saw; only that one counts."""
    settings.DEIDWEB_PROXY_COUNT = 1
    rng = random.Random(6)
    proxy = Client(REMOTE_ADDR="10.0.0.2")
    statuses = [
        proxy.get(
            URL,
            HTTP_X_FORWARDED_FOR=f"{_rotating(rng)}, {_rotating(rng)}, 203.0.113.50",
            **bearer(f"deid_{rng.getrandbits(64):x}"),
        ).status_code
        for _ in range(25)
    ]
    assert statuses == [401] * 20 + [429] * 5
    # Another client behind the same proxy is not affected.
    other = proxy.get(
        URL, HTTP_X_FORWARDED_FOR="203.0.113.51", **bearer("deid_someone-else-entirely")
    )
    assert other.status_code == 401


def test_valid_keys_at_a_throttled_address_still_work(
    limited, client_for, custodian, analyst, reviewer
):
    mine = new_key(client_for(analyst))
    theirs = new_key(client_for(reviewer), name="reviewer's script")
    office = Client(REMOTE_ADDR="192.0.2.10")  # one address shared by everyone (a NAT)
    wrong = [office.get(URL, **bearer(f"deid_wrong{i:03d}")).status_code for i in range(30)]
    assert wrong == [401] * 20 + [429] * 10
    assert office.get(URL, **bearer(mine)).status_code == 200
    assert office.get(URL, **bearer(theirs)).status_code == 200
    # and the wrong ones stay refused
    assert office.get(URL, **bearer("deid_wrong999")).status_code == 429


def test_failures_are_also_counted_per_key_prefix(limited, custodian):
    """Guesses at one key's prefix from many addresses are throttled by the prefix."""
    statuses = [
        Client(REMOTE_ADDR=f"198.18.{i // 250}.{i % 250 + 1}")
        .get(URL, **bearer(f"deid_AbCdEf{i:06d}"))
        .status_code
        for i in range(25)
    ]
    assert statuses == [401] * 20 + [429] * 5
    assert Client(REMOTE_ADDR="198.18.9.9").get(URL, **bearer("deid_ZyXwVu0000")).status_code == 401


def test_repeated_failures_are_aggregated_in_the_audit_trail(limited, custodian):
    attacker = Client(REMOTE_ADDR="198.51.100.99")
    for i in range(200):
        attacker.get(URL, **bearer(f"deid_g{i:05d}xxxxxx"))
    events = list(AuditEvent.objects.filter(organization__isnull=True).order_by("sequence"))
    assert [e.action for e in events] == [
        "auth.login_failed",
        "auth.login_failed_repeated",
        "auth.throttled",
        "auth.login_failed_repeated",
    ]
    first, tenth, throttled, hundredth = events
    assert first.details["ip"] == "198.51.100.99" and first.details["prefix"] == "deid_g00000"
    assert tenth.details["failures"] == 10
    assert throttled.details["failures"] == 21
    assert hundredth.details["failures"] == 100
    assert hundredth.details["ip"] == "198.51.100.99"
    assert len(hundredth.details["prefixes"]) == 20  # the first prefixes seen, bounded
    assert audit_verify(platform=True).ok


def _ipv6_in(network: str, rng: random.Random) -> str:
    import ipaddress

    net = ipaddress.ip_network(network)
    return str(net[rng.randrange(net.num_addresses)])


def test_one_ipv6_client_is_one_address_whatever_its_interface_bits(limited, custodian):
    """An IPv6 client owns a whole /64 (SLAAC, privacy addresses): a new address per request
    is as easy as a rotating header was. Its failures count against the /64, and the audit
    trail gets a few aggregated rows, not one per address."""
    rng = random.Random(64)
    statuses = [
        Client(REMOTE_ADDR=_ipv6_in("2001:db8:4:7::/64", rng))
        .get(URL, **bearer(f"deid_{rng.getrandbits(64):x}"))
        .status_code
        for _ in range(60)
    ]
    assert statuses == [401] * 20 + [429] * 40
    assert AuditEvent.objects.filter(action__startswith="auth.").count() <= 4
    # A neighbour in another /64 is somebody else.
    neighbour = Client(REMOTE_ADDR=_ipv6_in("2001:db8:4:8::/64", rng))
    assert neighbour.get(URL, **bearer("deid_neighbour-guess")).status_code == 401


def test_an_ipv4_client_seen_as_an_ipv4_mapped_ipv6_address_is_the_same_client(limited, custodian):
    """A dual-stack socket reports ``::ffff:203.0.113.9`` for the client ``203.0.113.9``:
    both spellings are one address."""
    rng = random.Random(46)
    statuses = [
        Client(REMOTE_ADDR="::ffff:203.0.113.9" if i % 2 else "203.0.113.9")
        .get(URL, **bearer(f"deid_{rng.getrandbits(64):x}"))
        .status_code
        for i in range(24)
    ]
    assert statuses == [401] * 20 + [429] * 4


def test_the_sign_in_lockout_counts_an_ipv6_client_by_its_64(client, user_factory, settings):
    """The sign-in form's lockout (user name and address) counts the same way: rotating the
    interface bits does not buy more guesses at one user's password."""
    user_factory("lock-target")
    rng = random.Random(10)
    statuses = []
    for _ in range(settings.AXES_FAILURE_LIMIT + 3):
        response = Client(REMOTE_ADDR=_ipv6_in("2001:db8:9:9::/64", rng)).post(
            "/accounts/login/", {"username": "lock-target", "password": "wrong-guess"}
        )
        statuses.append(response.status_code)
    assert statuses[-3:] == [429, 429, 429], statuses
