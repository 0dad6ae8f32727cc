from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.urls import include, path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)
from rest_framework.routers import DefaultRouter

from apps.accounts import views as account_views
from apps.accounts.api import OrganizationViewSet
from apps.assessments import api as assessments_api
from apps.assessments import views as assessment_views
from apps.assessments import (
    views_compare,
    views_deidentify,
    views_domains,
    views_justifications,
    views_release,
    views_release_forms,
)
from apps.assessments.api_domains import AssessmentDomainView, PseudonymDomainViewSet
from apps.assessments.api_justifications import JustificationActions
from apps.audit import views as audit_views
from apps.audit.api import AuditEventViewSet
from apps.classification import views as classification_views
from apps.classification.api import DatasetClassificationViewSet, VariableViewSet
from apps.core import views as core_views
from apps.datasets import cluster_views
from apps.datasets import views as dataset_views
from apps.datasets.api import DatasetViewSet
from apps.datasets.cluster_api import ClusterDatasetView, SparkConnectionView
from apps.jobs import views as job_views
from apps.jobs.api import JobViewSet
from apps.reports import views as report_views
from apps.reports import views_summary
from apps.reports.api import ReportActions, ReportViewSet
from apps.reports.api_summary import RecipientSummaryViewSet
from apps.reviews import views as review_views
from apps.reviews import views_reassessment
from apps.reviews.api import ReviewActions
from apps.reviews.api_reassessment import ReleaseViewSet
from apps.reviews.cluster_api import ClusterReleaseActions
from deidweb import views as deidweb_views


class AssessmentViewSet(
    ClusterReleaseActions,
    ReportActions,
    ReviewActions,
    JustificationActions,
    assessments_api.AssessmentViewSet,
):
    # The assessment's API gathers the actions of the apps above it (the review's, the
    # report's): assembled here, at the top, so that no app imports a higher one.
    __doc__ = assessments_api.AssessmentViewSet.__doc__


router = DefaultRouter()
router.register("organizations", OrganizationViewSet, basename="organization")
router.register("datasets", DatasetViewSet, basename="dataset")
router.register("classification", DatasetClassificationViewSet, basename="classification")
router.register("variables", VariableViewSet, basename="variable")
router.register("jobs", JobViewSet, basename="job")
router.register("assessments", AssessmentViewSet, basename="assessment")
router.register("audit", AuditEventViewSet, basename="audit")
router.register("reports", ReportViewSet, basename="report")
router.register("summaries", RecipientSummaryViewSet, basename="summary")
router.register("releases", ReleaseViewSet, basename="release")
router.register("pseudonym-domains", PseudonymDomainViewSet, basename="pseudonym-domain")

org_patterns = [
    path("", deidweb_views.org_home, name="org-home"),
    path("datasets/", dataset_views.dataset_list, name="dataset-list"),
    path("datasets/upload/", dataset_views.dataset_upload_view, name="dataset-upload"),
    path("cluster/", cluster_views.cluster_page, name="cluster"),
    path(
        "datasets/upload-tables/",
        dataset_views.dataset_upload_tables_view,
        name="dataset-upload-tables",
    ),
    path("datasets/<uuid:dataset_id>/", dataset_views.dataset_detail, name="dataset-detail"),
    path(
        "datasets/<uuid:dataset_id>/preview/",
        dataset_views.dataset_preview_view,
        name="dataset-preview",
    ),
    path(
        "datasets/<uuid:dataset_id>/delete/",
        dataset_views.dataset_delete_view,
        name="dataset-delete",
    ),
    path(
        "datasets/<uuid:dataset_id>/classify/",
        classification_views.classify,
        name="dataset-classify",
    ),
    path(
        "datasets/<uuid:dataset_id>/classify/accept/",
        classification_views.accept_suggestions,
        name="dataset-accept-suggestions",
    ),
    path("assessments/", assessment_views.assessment_list, name="assessment-list"),
    path("pseudonym-domains/", views_domains.pseudonym_domains_view, name="pseudonym-domains"),
    path(
        "datasets/<uuid:dataset_id>/assessments/new/",
        assessment_views.assessment_create,
        name="assessment-create",
    ),
    path(
        "assessments/<uuid:assessment_id>/",
        assessment_views.assessment_detail,
        name="assessment-detail",
    ),
    path(
        "assessments/<uuid:assessment_id>/steps/<slug:slug>/",
        assessment_views.assessment_step,
        name="assessment-step",
    ),
    path(
        "assessments/<uuid:assessment_id>/steps/deidentify/techniques/preview/",
        views_deidentify.technique_preview_view,
        name="assessment-technique-preview",
    ),
    path(
        "assessments/<uuid:assessment_id>/steps/deidentify/compare/",
        views_compare.alternatives_compare_view,
        name="assessment-compare",
    ),
    path(
        "assessments/<uuid:assessment_id>/steps/deidentify/release-form/",
        views_release_forms.release_form_view,
        name="assessment-release-form",
    ),
    path(
        "assessments/<uuid:assessment_id>/steps/deidentify/precheck/",
        views_deidentify.search_precheck,
        name="assessment-search-precheck",
    ),
    path(
        "assessments/<uuid:assessment_id>/release/preview/",
        views_release.release_preview,
        name="assessment-release-preview",
    ),
    path(
        "assessments/<uuid:assessment_id>/release/download/<slug:fmt>/",
        views_release.release_download,
        name="assessment-release-download",
    ),
    path(
        "assessments/<uuid:assessment_id>/release/secrets/",
        views_release.secrets_download,
        name="assessment-secrets",
    ),
    path(
        "assessments/<uuid:assessment_id>/steps/deidentify/justifications/",
        views_justifications.justifications_save,
        name="assessment-justifications",
    ),
    path("reviews/", review_views.review_queue, name="review-queue"),
    path("releases/", views_reassessment.release_registry, name="release-registry"),
    path(
        "releases/<uuid:release_id>/reassessment/",
        views_reassessment.release_reassessment,
        name="release-reassessment",
    ),
    path(
        "assessments/<uuid:assessment_id>/review/",
        review_views.assessment_review,
        name="assessment-review",
    ),
    path(
        "assessments/<uuid:assessment_id>/submit/",
        review_views.assessment_submit,
        name="assessment-submit",
    ),
    path(
        "assessments/<uuid:assessment_id>/revise/",
        review_views.assessment_revise,
        name="assessment-revise",
    ),
    path(
        "assessments/<uuid:assessment_id>/intruder-test/",
        review_views.intruder_test,
        name="assessment-intruder-test",
    ),
    path("audit/", audit_views.audit_list, name="audit-list"),
    path("jobs/<uuid:job_id>/", job_views.job_detail, name="job-detail"),
    path("jobs/<uuid:job_id>/progress/", job_views.job_progress, name="job-progress"),
    path("jobs/<uuid:job_id>/cancel/", job_views.job_cancel_view, name="job-cancel"),
    path("jobs/<uuid:job_id>/retry/", job_views.job_retry_view, name="job-retry"),
    path("reports/verify/", report_views.report_verify_view, name="report-verify"),
    path("reports/signing/", report_views.signing_view, name="organization-signing"),
    path(
        "reports/<uuid:report_id>/download/",
        report_views.report_download,
        name="report-download",
    ),
    path("reports/<uuid:report_id>/", report_views.report_view, name="report-view"),
    path(
        "reports/summaries/<uuid:summary_id>/<slug:kind>/",
        views_summary.summary_download,
        name="summary-download",
    ),
]

urlpatterns = [
    path("", account_views.home, name="home"),
    path("accounts/login/", account_views.SignInView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/", account_views.account, name="account"),
    path("accounts/password/", account_views.PasswordChangeView.as_view(), name="password-change"),
    path(
        "accounts/keys/<uuid:token_id>/revoke/",
        account_views.account_token_revoke,
        name="account-token-revoke",
    ),
    path("o/<slug:org>/", include(org_patterns)),
    path("help/", core_views.help_page, name="help-index"),
    path("help/<slug:topic>/", core_views.help_page, name="help"),
    path("health/", core_views.health, name="health"),
    # The schema and its readers are for signed-in users (SERVE_PERMISSIONS): the pages send
    # a visitor to the sign-in page, the schema answers 401/403 like the API.
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's start-up script as a file: no inline script.
    path(
        "api/docs/",
        login_required(SpectacularSwaggerSplitView.as_view(url_name="api-schema")),
        name="api-docs",
    ),
    path(
        "api/redoc/",
        login_required(SpectacularRedocView.as_view(url_name="api-schema")),
        name="api-redoc",
    ),
    path(
        "api/v1/spark-connection/<slug:org>/",
        SparkConnectionView.as_view(),
        name="api-spark-connection",
    ),
    path("api/v1/cluster-datasets/", ClusterDatasetView.as_view(), name="api-cluster-datasets"),
    path(
        "api/v1/assessments/<uuid:pk>/pseudonym-domain/",
        AssessmentDomainView.as_view(),
        name="assessment-pseudonym-domain",
    ),
    path("api/v1/", include(router.urls)),
    path("admin/", admin.site.urls),
]

# An unknown path under /api/ answers in the API's error format, not with an HTML page.
handler404 = "apps.core.api.not_found"
