"""``{{ info|known_facts }}``: the derived facts of a person release's attack tests, in
words (``attack_tests.known_facts``, also what the recipient summary's JSON twin holds)."""

from __future__ import annotations

from typing import Any

from django import template

from apps.assessments.attack_tests import known_facts as _known_facts

register = template.Library()


@register.filter
def known_facts(attacks: dict[str, Any] | None) -> list[dict[str, Any]]:
    return _known_facts(attacks)
