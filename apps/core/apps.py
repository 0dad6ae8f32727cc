from django.apps import AppConfig
from django.db.models.signals import post_migrate, pre_save

from apps.core.text_limits import refuse_unstorable_text


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"

    def ready(self) -> None:
        # lazy: AppConfig.ready() runs once the app registry is loaded; these modules import models
        from apps.core.db_guards import install_guards

        # After every migrate: the triggers that keep decided things decided (db_guards).
        post_migrate.connect(install_guards, sender=self, dispatch_uid="deidweb-db-guards")
        # Before any model is saved: text its column cannot hold is refused by name.
        pre_save.connect(refuse_unstorable_text, dispatch_uid="deidweb-text-limits")
