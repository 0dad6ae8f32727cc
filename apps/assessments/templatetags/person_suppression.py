"""``{% load person_suppression %}``: a stored person-level result's suppression, read by
``apps.assessments.person_suppression`` (old and new counting told apart there)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template

from apps.assessments import person_suppression as reading

register = template.Library()


@register.filter
def release_suppression(applied: Mapping[str, Any] | None) -> reading.PersonSuppression | None:
    """``{% with s=lg|release_suppression %}``: of an apply result or its summary."""
    return reading.release_suppression(applied)


@register.filter
def node_suppression(node: Mapping[str, Any] | None) -> reading.PersonSuppression | None:
    """``{% with s=node|node_suppression %}``: of a stored search node."""
    return reading.node_suppression(node)


@register.filter
def rows_suppressed(applied: Mapping[str, Any] | None) -> int | str:
    """Records (events) a stored release removed, each once; "" when not stored (as a
    missing key reads in a template)."""
    value = reading.rows_suppressed(applied)
    return "" if value is None else value


@register.filter
def rows_suppressed_share(applied: Mapping[str, Any] | None) -> float | str:
    value = reading.rows_suppressed_share(applied)
    return "" if value is None else value
