from django.apps import AppConfig
from django.db.models.signals import post_migrate


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"

    def ready(self) -> None:
        from apps.core.db_guards import install_guards

        # After every migrate: the triggers that keep decided things decided (db_guards).
        post_migrate.connect(install_guards, sender=self, dispatch_uid="deidweb-db-guards")
