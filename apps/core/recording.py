"""Recording an event in the audit trail, for the layers below ``apps.audit``.

The audit trail sits above ``core`` and ``accounts``, yet the master key's rotation, the
admin site and the accounts' services record events in it. They call ``audit_record`` here;
``apps.audit`` provides the function that appends to the chain (``AuditConfig.ready``).
"""

from __future__ import annotations

from typing import Any

from django.db import models

from apps.core.hooks import Provided


@Provided.declare
def audit_record(
    *,
    organization: Any,
    actor: Any,
    action: str,
    obj: models.Model | None = None,
    details: dict[str, Any] | None = None,
    object_type: str = "",
    object_id: str = "",
) -> Any:
    """Append one event to the organization's chain (the platform's when ``organization`` is
    None) and return it: ``apps.audit.services.audit_record``."""
