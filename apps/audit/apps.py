from typing import Any

from django.apps import AppConfig
from django.core import checks


def audit_key_check(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """At start-up (runserver, migrate, check): say when the audit trail is sealed with a key
    anyone can know (the development default)."""
    # lazy: apps.py is imported before the models are loaded; a check runs after
    from apps.audit.services import audit_key_is_public

    if not audit_key_is_public():
        return []
    return [
        checks.Warning(
            "The audit trail is sealed with the built-in development key (derived from a "
            "published SECRET_KEY): anyone can re-seal an edited audit trail, and every "
            "report says so in its footer.",
            hint="Set SECRET_KEY to a random value, or DEIDWEB_AUDIT_KEY on its own.",
            id="deidweb.W001",
        )
    ]


class AuditConfig(AppConfig):
    name = "apps.audit"
    label = "audit"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed

        # lazy: AppConfig.ready() runs once the app registry is loaded; these modules import models
        from apps.audit import signals
        from apps.audit.anchors import stored_anchor_provider
        from apps.audit.services import ANCHOR_PROVIDERS, audit_record
        from apps.core import recording

        # The layers below the audit trail (core, accounts) record through core's hook.
        recording.audit_record.provide(audit_record)
        user_logged_in.connect(signals.on_login, dispatch_uid="deidweb-audit-login")
        user_logged_out.connect(signals.on_logout, dispatch_uid="deidweb-audit-logout")
        user_login_failed.connect(signals.on_login_failed, dispatch_uid="deidweb-audit-failed")

        from axes.signals import user_locked_out

        user_locked_out.connect(signals.on_locked_out, dispatch_uid="deidweb-audit-lockout")
        # The chain's heads kept in the file storage, outside the database (apps.audit.anchors).
        if stored_anchor_provider not in ANCHOR_PROVIDERS:
            ANCHOR_PROVIDERS.append(stored_anchor_provider)
        checks.register(audit_key_check, checks.Tags.security)
