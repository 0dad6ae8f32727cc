from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "apps.jobs"
    label = "jobs"

    def ready(self) -> None:
        # lazy: AppConfig.ready() runs once the app registry is loaded; these modules import models
        from apps.jobs import queueing, tasks

        # Queueing sends a job's message through the task above it (no import cycle).
        queueing.job_message_send.provide(tasks.run_job_send)
