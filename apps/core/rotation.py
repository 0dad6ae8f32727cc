"""Master-key rotation: every wrapped data key re-wrapped under the current master key.

A model declares the fields that hold sealed values or wrapped keys in ``SEALED_FIELDS``;
this walks them all. Sealed files keep their wrapped key on the row that names them
(``apps.core.crypto``), so re-wrapping is database work only, in one transaction: it
either re-wraps everything or, when one value cannot be opened with the keys at hand,
nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.apps import apps
from django.db import models, transaction

from apps.core import crypto
from apps.core.errors import ApplicationError
from apps.core.recording import audit_record


@dataclass
class Rotation:
    current_key_id: str
    rewrapped: Counter[str] = field(default_factory=Counter)
    already_current: Counter[str] = field(default_factory=Counter)

    @property
    def total_rewrapped(self) -> int:
        return sum(self.rewrapped.values())


def sealed_fields() -> list[tuple[type[models.Model], str]]:
    """(model, field name) of every field declared as holding sealed values."""
    return [
        (model, name) for model in apps.get_models() for name in getattr(model, "SEALED_FIELDS", ())
    ]


def master_key_rotate(*, dry_run: bool = False) -> Rotation:
    """Re-wrap every stored data key from ``DEIDWEB_MASTER_KEY_PREVIOUS`` (or any key this
    process holds) to ``DEIDWEB_MASTER_KEY``. Safe to run twice: a value already wrapped by
    the current key is left as it is."""
    current = crypto.current_master_key()
    known = crypto.master_keys()
    rotation = Rotation(current_key_id=current.key_id)
    unreadable: list[str] = []
    with transaction.atomic():
        for model, name in sealed_fields():
            label = f"{model._meta.label_lower}.{name}"
            manager = model._default_manager
            rows = manager.select_for_update().exclude(**{name: ""}).values_list("pk", name)
            for pk, token in rows:
                try:
                    key_id = crypto.key_id_of(token)
                except crypto.SecretUnreadable:
                    unreadable.append(f"{label} of {pk}: not a sealed value")
                    continue
                if key_id == current.key_id:
                    rotation.already_current[label] += 1
                    continue
                if key_id not in known:
                    unreadable.append(f"{label} of {pk}: wrapped by unknown master key {key_id}")
                    continue
                if not dry_run:
                    manager.filter(pk=pk, **{name: token}).update(**{name: crypto.rewrap(token)})
                rotation.rewrapped[label] += 1
        if unreadable:
            raise ApplicationError(
                "Nothing was re-wrapped: "
                + str(len(unreadable))
                + " value(s) cannot be opened with DEIDWEB_MASTER_KEY or "
                "DEIDWEB_MASTER_KEY_PREVIOUS — " + "; ".join(unreadable[:10]),
                {"unreadable": unreadable},
            )
        if rotation.total_rewrapped and not dry_run:
            audit_record(
                organization=None,
                actor=None,
                action="crypto.master_key_rotated",
                object_type="core.master_key",
                object_id=current.key_id,
                details={
                    "to_key_id": current.key_id,
                    "rewrapped": dict(rotation.rewrapped),
                },
            )
    return rotation
