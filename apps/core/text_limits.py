"""Text that a column cannot hold is refused before it is written, on every write path.

PostgreSQL refuses a ``varchar(n)`` value longer than ``n`` and any NUL character, with an
error that surfaces as a 500 wherever a form, a serializer or a service forgot to check;
SQLite stores either silently, so a deployment would find out late. Every model save goes
through ``refuse_unstorable_text`` (a ``pre_save`` receiver for all models): a text field
longer than its ``max_length``, or holding a NUL, raises an ``ApplicationError`` naming the
field (400 in the API, a message on the pages, a failed job saying why). Forms and
serializers still say it first, next to the field; this is the guard behind them.
"""

from __future__ import annotations

from typing import Any

from django.db import models

from apps.core.errors import ApplicationError


def unstorable_text(instance: models.Model) -> tuple[models.Field[Any, Any], str] | None:
    """The first text field of ``instance`` its column cannot store, and why."""
    for field in instance._meta.concrete_fields:
        if not isinstance(field, models.CharField | models.TextField):
            continue
        value = getattr(instance, field.attname, None)
        if not isinstance(value, str):
            continue
        if "\x00" in value:
            return field, "contains a NUL character, which no field accepts"
        limit = field.max_length if isinstance(field, models.CharField) else None
        if limit is not None and len(value) > limit:
            return field, f"has {len(value):,} characters; at most {limit:,} are allowed"
    return None


def refuse_unstorable_text(
    sender: type[models.Model], instance: models.Model, raw: bool = False, **kwargs: Any
) -> None:
    if raw:  # fixtures loaded as they are
        return
    found = unstorable_text(instance)
    if found is None:
        return
    field, why = found
    label = str(field.verbose_name)
    owner = str(instance._meta.verbose_name)
    raise ApplicationError(
        f"The {owner}'s {label} {why}.",
        {"field": field.name, "max_length": getattr(field, "max_length", None)},
    )
