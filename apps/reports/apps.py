from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "apps.reports"
    label = "reports"

    def ready(self) -> None:
        # lazy: AppConfig.ready() runs once the app registry is loaded; these modules import models
        from apps.reports.jobs import report_again, report_request
        from apps.reviews import hooks as review_hooks

        # A final decision gets its signed report; the review page's button asks again.
        review_hooks.decision_final.subscribe(report_request)
        review_hooks.report_prepare_again.provide(report_again)
