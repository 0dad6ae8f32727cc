from django.apps import AppConfig


class ClassificationConfig(AppConfig):
    name = "apps.classification"
    label = "classification"
