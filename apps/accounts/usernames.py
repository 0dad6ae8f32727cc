"""User names that cannot pass for someone else's (Unicode TR #39, "Security Mechanisms").

``demo-аnalyst`` with a Cyrillic "а" reads as ``demo-analyst``: in the audit trail, on a
review decision and in a signed report it would pass for another person. Every path that
creates or renames a user goes through here (the admin's forms and ``createsuperuser`` through
the field's validator, the services, and any other save through the ``pre_save`` guard):

1. the name is put in Unicode normalization form NFKC (full-width ``ｄｅｍｏ`` is ``demo``);
2. its letters come from one script — Latin, Cyrillic, Greek… — or from one of the mixes
   TR #39's "highly restrictive" level allows for Chinese, Japanese and Korean names;
0. its characters are those Django allows in user names (letters, digits, ``@.+-_``), on
   every path: nothing invisible (zero-width joiners, bidirectional overrides, soft hyphens),
   no space or control character, no combining mark left unjoined;
3. its *skeleton* — each character replaced by the Latin letter it looks like (the small
   table below, for Latin look-alikes in Cyrillic, Greek and Armenian, Latin small capitals
   and the digits 0 and 1), case-folded, with ``rn``/``m``, ``vv``/``w`` and ``l``/``i``
   (a capital I) read alike — is no other user's skeleton: an all-Cyrillic ``аре`` or a
   ``demo-ana1yst`` is refused while ``ape`` or ``demo-analyst`` exists, as is ``Admin``
   beside ``admin``; a name equal to another once normalized is taken.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError

from apps.core.errors import ApplicationError

# Latin look-alikes (a subset of Unicode's confusables.txt, by hand, for the scripts that
# share Latin's shapes). Upper and lower case are mapped apart: Greek capital eta looks like
# H, its small letter like n.
_LOOK_ALIKES = {
    # Cyrillic capitals and small letters
    "А": "A", "В": "B", "Е": "E", "З": "3", "І": "I", "Ј": "J", "К": "K", "М": "M",
    "Н": "H", "О": "O", "Р": "P", "С": "C", "Ѕ": "S", "Т": "T", "У": "Y", "Х": "X",
    "Ү": "Y", "Һ": "h", "Ӏ": "l", "Ԛ": "Q", "Ԝ": "W", "Ь": "b", "Ԁ": "d",
    "а": "a", "в": "b", "г": "r", "е": "e", "ё": "e", "и": "u", "й": "u", "к": "k",
    "м": "m", "н": "h", "о": "o", "п": "n", "р": "p", "с": "c", "т": "t", "у": "y",
    "х": "x", "ъ": "b", "ь": "b", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "һ": "h",
    "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l", "ү": "y", "ѵ": "v", "ҫ": "c", "ӓ": "a",
    "ӧ": "o", "ԍ": "g",
    # Greek capitals and small letters
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
    "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϲ": "C", "Ϳ": "J",
    "α": "a", "γ": "y", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
    "ρ": "p", "σ": "o", "τ": "t", "υ": "u", "χ": "x", "ω": "w", "ϲ": "c", "ϳ": "j",
    "ί": "i", "ό": "o", "ύ": "u", "ά": "a", "έ": "e",
    # Armenian
    "օ": "o", "ս": "u", "ց": "g", "հ": "h", "ո": "n", "զ": "q", "Օ": "O", "Ս": "U",
    # Latin letters and digits that pass for others
    "ı": "i", "ȷ": "j", "ɑ": "a", "ɡ": "g", "ɩ": "i", "ʏ": "y", "ᴅ": "d", "0": "o", "1": "l",
}  # fmt: skip


def _small_capitals() -> dict[str, str]:
    """Latin letters drawn as small capitals (``ᴀ``, ``ʀ``): Latin too, so no mix of scripts
    shows them; found by their Unicode names (IPA and phonetic blocks)."""
    found = {}
    for code in range(0x0250, 0x1E00):
        words = unicodedata.name(chr(code), "").split()
        if (
            words[:4] == ["LATIN", "LETTER", "SMALL", "CAPITAL"]
            and len(words) == 5 == len(words[4]) + 4
        ):
            found[chr(code)] = words[4].lower()
    return found


_LOOK_ALIKES.update({c: base for c, base in _small_capitals().items() if c not in _LOOK_ALIKES})
# After case folding, shapes one font draws alike: a capital I (folded to i), a small l and a
# digit 1 are one stroke; "rn" reads as "m", "vv" as "w" (TR #39's confusables.txt).
_FOLDED_ALIKES = (("rn", "m"), ("vv", "w"), ("l", "i"))

# Scripts that may share one name (TR #39, highly restrictive): Chinese, Japanese, Korean.
_ALLOWED_MIXES = (
    frozenset({"Latin", "Han", "Hiragana", "Katakana"}),
    frozenset({"Latin", "Han", "Bopomofo"}),
    frozenset({"Latin", "Han", "Hangul"}),
)
_SCRIPT_NAMES = {"CJK": "Han", "IDEOGRAPHIC": "Han"}


def normalized(name: str) -> str:
    return unicodedata.normalize("NFKC", name)


def script_of(character: str) -> str:
    """The script of a letter ("Latin", "Cyrillic"…), "" for digits and punctuation."""
    if not character.isalpha():
        return ""
    words = unicodedata.name(character, "").split()
    if not words:
        return "Unknown"
    return _SCRIPT_NAMES.get(words[0], words[0].title())


def skeleton(name: str) -> str:
    """What ``name`` looks like: look-alikes replaced by the Latin they pass for, then
    case-folded (two names with one skeleton cannot be told apart by eye)."""
    text = normalized(name)
    folded = "".join(_LOOK_ALIKES.get(c, c) for c in text).casefold()
    for shape, reads_as in _FOLDED_ALIKES:
        folded = folded.replace(shape, reads_as)
    return folded


def character_problem(name: str) -> str:
    """Why the characters of ``name`` cannot make a user name ("" when they can): Django's
    own rule for user names (letters, digits and ``@.+-_``), which leaves out what shows
    nothing or only space — format characters such as a zero-width joiner or a right-to-left
    override, controls, spaces, and combining marks not joined to a letter."""
    text = normalized(name)
    if not text:
        return "it is empty"
    if (
        re.search(UnicodeUsernameValidator.regex, text, flags=UnicodeUsernameValidator.flags)
        is None
    ):
        odd = next(
            (c for c in text if not (c.isalnum() or c in "@.+-_")),
            "",
        )
        shown = f"U+{ord(odd):04X} {unicodedata.name(odd, 'an unnamed character')}" if odd else ""
        return "only letters, digits and @ . + - _ may be used" + (
            f"; it holds {shown}, which shows nothing or only space" if shown else ""
        )
    return ""


def mixed_scripts(name: str) -> str:
    """Why ``name`` mixes scripts ("" when it does not)."""
    scripts: dict[str, str] = {}
    for character in normalized(name):
        script = script_of(character)
        if script and script not in scripts:
            scripts[script] = character
    if len(scripts) <= 1 or any(set(scripts) <= mix for mix in _ALLOWED_MIXES):
        return ""
    shown = " and ".join(f"{script} ({letter!r})" for script, letter in scripts.items())
    return (
        f"it mixes the letters of {len(scripts)} scripts, {shown}, so it can pass for another name"
    )


def look_alike_of(name: str, *, exclude_pk: Any = None) -> str | None:
    """The existing user name that ``name`` cannot be told apart from, if any (its own
    record and an exact match — the unique constraint's case — aside)."""
    target = skeleton(name)
    users = get_user_model().objects.exclude(username=normalized(name))
    if exclude_pk is not None:
        users = users.exclude(pk=exclude_pk)
    for other in users.values_list("username", flat=True).iterator(chunk_size=2000):
        if skeleton(other) == target:
            return str(other)
    return None


def username_problem(name: str, *, exclude_pk: Any = None) -> str:
    """Why ``name`` may not be a user name ("" when it may)."""
    characters = character_problem(name)
    if characters:
        return f"The user name {normalized(name)!a} is refused: {characters}."
    mixed = mixed_scripts(name)
    if mixed:
        return f"The user name '{normalized(name)}' is refused: {mixed}."
    other = look_alike_of(name, exclude_pk=exclude_pk)
    if other is not None:
        return (
            f"The user name '{normalized(name)}' is refused: it cannot be told apart from the "
            f"existing user '{other}'."
        )
    return ""


def validate_username(value: str) -> None:
    """The username field's validator (admin forms, ``createsuperuser``)."""
    problem = username_problem(str(value))
    if problem:
        raise ValidationError(problem, code="confusable")


def guard_username(sender: Any, instance: Any, raw: bool = False, **kwargs: Any) -> None:
    """``pre_save`` of the user model: every save (a service, the shell, a command) stores
    the NFKC form, and one that cannot be told apart from another user is refused."""
    if raw:
        return
    name = getattr(instance, "username", None)
    if not isinstance(name, str):
        return
    instance.username = normalized(name)
    previous = None
    if instance.pk is not None and not instance._state.adding:
        previous = (
            type(instance).objects.filter(pk=instance.pk).values_list("username", flat=True).first()
        )
    if previous == instance.username:
        return  # unchanged: a name kept from before the rule is not refused on every save
    problem = username_problem(instance.username, exclude_pk=instance.pk)
    if not problem and (
        type(instance).objects.filter(username=instance.username).exclude(pk=instance.pk).exists()
    ):
        problem = f"The user name '{instance.username}' is taken."
    if problem:
        raise ApplicationError(problem, {"field": "username"})
