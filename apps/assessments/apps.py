from django.apps import AppConfig
from django.conf import settings

from apps.engine.lattice import set_search_memory


class AssessmentsConfig(AppConfig):
    name = "apps.assessments"
    label = "assessments"

    def ready(self) -> None:
        # lazy: AppConfig.ready() runs once the app registry is loaded; these modules import models
        from apps.assessments.services import assessments_roles_changed
        from apps.classification import hooks as classification_hooks

        classification_hooks.roles_changed.subscribe(assessments_roles_changed)

        # The engine takes its search's memory budget from the deployment's setting.
        set_search_memory(settings.DEIDWEB_SEARCH_MEMORY_MB << 20)
