from django.apps import AppConfig


class AssessmentsConfig(AppConfig):
    name = "apps.assessments"
    label = "assessments"
