"""Text that a column cannot hold is refused before it is written, on every write path.

PostgreSQL refuses a ``varchar(n)`` value longer than ``n`` and any NUL character — in text
and in ``jsonb`` alike (``\u0000``) — with an error that surfaces as a 500 wherever a form, a
serializer or a service forgot to check; SQLite stores either silently, so a deployment would
find out late. Every model save goes through ``refuse_unstorable_text`` (a ``pre_save``
receiver for all models): a text field longer than its ``max_length``, or a text or JSON
field holding a NUL (in a JSON value or key: free settings such as a hierarchy's labels or
group names), raises an ``ApplicationError`` naming the field (400 in the API, a message on
the pages, a failed job saying why). Forms and serializers still say it first, next to the
field; this is the guard behind them. (A NUL in a part of a request nothing reads is left
alone: it is never stored.)
"""

from __future__ import annotations

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from apps.core.errors import ApplicationError


def nul_in_json(value: Any, where: str = "") -> str | None:
    """Where the first NUL character is in a JSON value (a key or a text), or None."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return path or "its value"
        elif isinstance(item, dict):
            for key, inner in item.items():
                name = f"{path}.{key}" if path else str(key)
                if isinstance(key, str) and "\x00" in key:
                    return name.replace("\x00", "")
                stack.append((inner, name))
        elif isinstance(item, list | tuple):
            stack.extend((inner, f"{path}[{i}]") for i, inner in enumerate(item))
    return None


def unstorable_text(instance: models.Model) -> tuple[models.Field[Any, Any], str] | None:
    """The first text or JSON field of ``instance`` its column cannot store, and why."""
    for field in instance._meta.concrete_fields:
        if isinstance(field, models.JSONField):
            value = getattr(instance, field.attname, None)
            # Fast path in C for large results: a NUL is written \u0000 in JSON; only then
            # is the value walked (to confirm it and say where).
            try:
                if "\\u0000" not in json.dumps(value, cls=DjangoJSONEncoder):
                    continue
            except (TypeError, ValueError):
                pass  # not plain JSON: walk it
            where = nul_in_json(value)
            if where is not None:
                return field, f"contains a NUL character (at {where}), which no field accepts"
            continue
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
