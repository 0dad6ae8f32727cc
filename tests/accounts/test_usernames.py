"""Issue 23, item 15: a user name cannot pass for another. ``demo-аnalyst`` (a Cyrillic "а")
was accepted beside ``demo-analyst``; in the audit trail and a signed report the two read
the same.

Every path that creates or renames a user — the admin's add and change forms,
``createsuperuser``, the accounts service, any other save — normalizes the name (NFKC),
refuses one that mixes scripts, and one whose look (its TR #39 skeleton) is another user's.
The mixed-script cases are generated from Unicode's own letter names, not from a list."""

from __future__ import annotations

import random
import unicodedata

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from apps.accounts.services import user_create
from apps.core.errors import ApplicationError

pytestmark = pytest.mark.django_db
User = get_user_model()
HOMOGLYPH = "demo-\u0430nalyst"  # Cyrillic small a


def _letters_of(*blocks: tuple[int, int]) -> list[str]:
    """Every letter Unicode has in these blocks (Cyrillic, Greek, Armenian): generated, not
    listed, so the test covers letters no table of look-alikes names."""
    return [
        chr(code)
        for first, last in blocks
        for code in range(first, last + 1)
        if chr(code).isalpha() and unicodedata.normalize("NFKC", chr(code)).isalpha()
    ]


FOREIGN_LETTERS = _letters_of((0x0370, 0x03FF), (0x0400, 0x04FF), (0x0531, 0x058F))


@pytest.fixture
def superuser(db):  # type: ignore[no-untyped-def]
    return User.objects.create_superuser("root-admin", "root@example.org", "pw-root-admin-1")


@pytest.fixture
def demo(db):  # type: ignore[no-untyped-def]
    return User.objects.create_user("demo-analyst", password="pw-demo-analyst")


def test_the_admin_add_form_refuses_a_homoglyph(client, superuser, demo):
    client.force_login(superuser)
    page = client.post(
        "/admin/auth/user/add/",
        {"username": HOMOGLYPH, "password1": "Zq8-long-pass-9", "password2": "Zq8-long-pass-9"},
    )
    assert page.status_code == 200
    text = page.content.decode()
    assert "it mixes the letters of 2 scripts, Latin" in text and "Cyrillic" in text
    assert not User.objects.filter(username=HOMOGLYPH).exists()


def test_the_admin_change_form_refuses_a_rename_to_a_look_alike(client, superuser, demo):
    other = User.objects.create_user("second-user", password="pw-second-user")
    client.force_login(superuser)
    page = client.get(f"/admin/auth/user/{other.pk}/change/")
    form = page.context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None and not isinstance(v, list)}
    data.update(
        {
            "username": "dem\u043e-analyst",  # Cyrillic o: mixed
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
            "is_active": "on",
        }
    )
    data.pop("password", None)
    data.pop("last_login", None)
    page = client.post(f"/admin/auth/user/{other.pk}/change/", data)
    assert page.status_code == 200, page.status_code
    assert "it mixes the letters of 2 scripts" in page.content.decode()
    other.refresh_from_db()
    assert other.username == "second-user"


def test_createsuperuser_refuses_a_homoglyph(demo):
    with pytest.raises(CommandError, match="mixes the letters of 2 scripts"):
        call_command(
            "createsuperuser",
            interactive=False,
            username=HOMOGLYPH,
            email="x@example.org",
            verbosity=0,
        )
    assert not User.objects.filter(username=HOMOGLYPH).exists()


def test_createsuperuser_refuses_a_whole_script_look_alike(demo):
    with pytest.raises(CommandError, match="cannot be told apart from the existing user"):
        call_command(
            "createsuperuser",
            interactive=False,
            username="demo-ana1yst",
            email="x@example.org",
            verbosity=0,
        )


def test_the_service_and_any_save_refuse_it(demo):
    with pytest.raises(ApplicationError, match="mixes the letters of 2 scripts"):
        user_create(username=HOMOGLYPH, password="Zq8-long-pass-9")
    with pytest.raises(ApplicationError, match="mixes the letters"):
        User.objects.create_user(HOMOGLYPH, password="x")
    renamed = User.objects.create_user("third-user", password="x")
    renamed.username = HOMOGLYPH
    with pytest.raises(ApplicationError, match="mixes the letters"):
        renamed.save()
    assert User.objects.filter(username=HOMOGLYPH).count() == 0


@pytest.mark.parametrize(
    "name",
    [
        "\u0430\u0440\u0435",  # Cyrillic а р е
        "\u0391\u03a1\u0395",  # Greek capitals Α Ρ Ε
        "APE",  # the same letters in capitals
    ],
)
def test_a_whole_script_look_alike_of_an_existing_user_is_refused(db, name):
    User.objects.create_user("ape", password="x")
    with pytest.raises(ApplicationError, match="cannot be told apart from the existing user 'ape'"):
        User.objects.create_user(name, password="x")


def test_any_cyrillic_greek_or_armenian_letter_in_a_latin_name_is_refused(db):
    """Each such letter, put in place of a letter of a Latin name (a different position each
    time), is refused: it mixes scripts, whether or not it looks like a Latin letter."""
    assert len(FOREIGN_LETTERS) > 300
    names = ["demo-analyst", "reviewer", "privacy-officer", "kim.chen"]
    rng = random.Random(23)
    for number, letter in enumerate(FOREIGN_LETTERS):
        base = names[number % len(names)]
        position = rng.choice([i for i, c in enumerate(base) if c.isalpha()])
        spoof = base[:position] + letter + base[position + 1 :]
        with pytest.raises(ApplicationError, match="mixes the letters"):
            User.objects.create_user(spoof, password="x")
    assert not User.objects.exists()


def test_names_are_stored_in_nfkc_and_real_names_in_one_script_are_accepted(db):
    fullwidth = User.objects.create_user("\uff44\uff45\uff4d\uff4f-user", password="x")
    fullwidth.refresh_from_db()
    assert fullwidth.username == "demo-user"
    for name in (
        "ren\u00e9e",
        "m\u00fcller",
        "\u0438\u0432\u0430\u043d",
        "\u7530\u4e2dtaro",
        "\u03b1\u03bb\u03ad\u03be\u03b7\u03c2",
    ):
        User.objects.create_user(name, password="x")
    assert User.objects.filter(username="\u0438\u0432\u0430\u043d").exists()
    # A name kept from before the rule is not refused when the user is saved again.
    assert User.objects.get(username="ren\u00e9e").save() is None


def _invisible_characters() -> list[str]:
    """Characters that show nothing or only space: every format and control character,
    every space and line separator, and combining marks on their own — generated from the
    Unicode database, not listed."""
    categories = {"Cf", "Cc", "Zs", "Zl", "Zp", "Me"}
    found = [
        chr(code)
        for code in range(0x110000)
        if unicodedata.category(chr(code)) in categories
        or (0x0300 <= code <= 0x036F)  # the combining diacritical marks block
    ]
    rng = random.Random(39)
    return sorted(set(rng.sample(found, 120)) | {"\x00", "\u200b", "\u200d", "\u202e", "\ufeff"})


def test_invisible_characters_spaces_and_loose_marks_are_refused_on_every_path(db, demo):
    """``demo\u200d-analyst`` (a zero-width joiner), ``demo-analyst\u00a0`` or a right-to-left
    override read as ``demo-analyst`` or its mirror; the admin's form refused them (Django's
    user name characters) but the service and any other save stored them — or answered a
    database error for a NUL. Every path now applies the same characters rule."""
    rng = random.Random(7)
    for character in _invisible_characters():
        position = rng.randrange(len("demo-analyst") + 1)
        if unicodedata.category(character).startswith("M"):
            position = len("demo-")  # unjoined: after a hyphen (on a letter, NFKC may join it)
        name = "demo-analyst"[:position] + character + "demo-analyst"[position:]
        with pytest.raises(ApplicationError) as refused:
            user_create(username=name, password="Zq8-long-pass-9-x")
        assert "user name" in refused.value.message, (hex(ord(character)), refused.value.message)
        with pytest.raises(ApplicationError):
            User.objects.create_user(name, password="x")
    assert list(User.objects.values_list("username", flat=True)) == ["demo-analyst"]


def test_a_name_equal_to_another_once_normalized_is_taken_not_a_server_error(db, demo):
    for name in ("\uff44\uff45\uff4d\uff4f-analyst", "demo-analy\u017ft"):  # full-width, long s
        with pytest.raises(ApplicationError, match="is taken|cannot be told apart"):
            user_create(username=name, password="Zq8-long-pass-9-x")
        with pytest.raises(ApplicationError, match="is taken|cannot be told apart"):
            User.objects.create_user(name, password="x")


def _latin_small_capitals() -> dict[str, str]:
    """Latin letters drawn as small capitals (``ᴀ`` for ``a``), found by their Unicode names."""
    found = {}
    for code in range(0x0250, 0x1E00):
        words = unicodedata.name(chr(code), "").split()
        if (
            words[:4] == ["LATIN", "LETTER", "SMALL", "CAPITAL"]
            and len(words) == 5 == len(words[4]) + 4
        ):
            found[chr(code)] = words[4].lower()
    return found


def test_latin_look_alikes_inside_latin_are_refused(db):
    """Look-alikes that stay in the Latin script: a capital I for a small l, small capitals,
    ``rn`` for ``m``, ``vv`` for ``w``."""
    existing = ["paul-lambert", "emma-wills", "david-clark"]
    for name in existing:
        User.objects.create_user(name, password="x")
    capitals = _latin_small_capitals()
    assert len(capitals) >= 15
    spoofs = ["pauI-Iambert", "ernrna-wills", "emma-vvills", "david-cIark", "paul-1ambert"]
    for name in existing:
        for position, letter in enumerate(name):
            small = next((c for c, base in capitals.items() if base == letter), None)
            if small is not None:
                spoofs.append(name[:position] + small + name[position + 1 :])
    assert len(spoofs) > 20
    for spoof in spoofs:
        with pytest.raises(ApplicationError, match="cannot be told apart"):
            User.objects.create_user(spoof, password="x")
    assert User.objects.count() == 3
