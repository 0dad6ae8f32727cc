from django.apps import AppConfig


class ClassificationConfig(AppConfig):
    name = "apps.classification"
    label = "classification"

    def ready(self) -> None:
        # lazy: AppConfig.ready() runs once the app registry is loaded; these modules import models
        from apps.classification.services import (
            identifier_values_shown,
            variables_create_from_profile,
        )
        from apps.datasets import hooks as dataset_hooks

        # A profiled data set gets its variables; raw values shown are audited by role.
        dataset_hooks.profile_stored.subscribe(variables_create_from_profile)
        dataset_hooks.raw_values_shown.subscribe(identifier_values_shown)
