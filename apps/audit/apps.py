from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "apps.audit"
    label = "audit"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed

        from apps.audit import signals

        user_logged_in.connect(signals.on_login, dispatch_uid="deidweb-audit-login")
        user_logged_out.connect(signals.on_logout, dispatch_uid="deidweb-audit-logout")
        user_login_failed.connect(signals.on_login_failed, dispatch_uid="deidweb-audit-failed")

        from axes.signals import user_locked_out

        user_locked_out.connect(signals.on_locked_out, dispatch_uid="deidweb-audit-lockout")
