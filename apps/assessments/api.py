"""``/api/v1/assessments/``: every step's data and action, with the pages' rules and roles.

Thin over the services: serializers validate the shape of a request, the services apply
the method's rules (their ``ApplicationError`` becomes a 400 ``{"message", "extra"}``), and
the responses show the stored inputs and results the pages show.

Roles are the pages' roles: any member reads, analysts and administrators write, only they
see the release preview, administrators alone the keys and linking tables, and the release
files leave only once the assessment is approved. Outside the caller's organizations every
assessment is a 404.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.api_permissions import OrganizationRole
from apps.accounts.decorators import user_of
from apps.accounts.models import Organization
from apps.accounts.selectors import membership_get
from apps.assessments import services
from apps.assessments.api_base import AssessmentFilterSerializer
from apps.assessments.api_blocks import (
    apply_data,
    context_data,
    deid_config_data,
    overall_data,
    persons_data,
    release_data,
    risk_data,
    search_data,
    steps_data,
    threshold_data,
    utility_data,
)
from apps.assessments.api_deidentify import DeidentifyActions
from apps.assessments.api_release_files import ReleaseFileActions
from apps.assessments.api_release_forms import ReleaseFormActions
from apps.assessments.api_steps import StepActions
from apps.assessments.models import Assessment, AssessmentStatus
from apps.assessments.serializers import (
    ContextSerializer,
    OverallSerializer,
    PersonsSerializer,
    RiskSerializer,
    StepStateSerializer,
    ThresholdStateSerializer,
    UtilitySerializer,
)
from apps.assessments.serializers_deidentify import (
    ApplySerializer,
    DeidConfigSerializer,
    SearchSerializer,
)
from apps.assessments.serializers_release import (
    ReleaseStateSerializer,
)
from apps.core import fields as strict
from apps.datasets.models import Dataset

# --------------------------------------------------------------------------- assessments


class AssessmentSummarySerializer(serializers.ModelSerializer[Assessment]):
    organization: serializers.SlugRelatedField[Organization] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    dataset: serializers.PrimaryKeyRelatedField[Dataset] = serializers.PrimaryKeyRelatedField(
        read_only=True
    )
    dataset_name = strict.CharField(source="dataset.name", read_only=True)
    status = strict.CharField(read_only=True, help_text="draft, submitted, approved or rejected.")
    release_model = strict.CharField(read_only=True, help_text="As declared in Step 1.")
    effective_release_model = strict.CharField(read_only=True)
    created_by = strict.CharField(source="created_by.username", read_only=True, default=None)

    class Meta:
        model = Assessment
        fields = [
            "id",
            "organization",
            "dataset",
            "dataset_name",
            "title",
            "status",
            "version",
            "release_model",
            "effective_release_model",
            "created_by",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class AssessmentSerializer(AssessmentSummarySerializer):
    """The whole assessment: every step's inputs and results, and the steps' states."""

    status = serializers.ChoiceField(choices=AssessmentStatus.choices, read_only=True)  # type: ignore[assignment]
    steps = serializers.SerializerMethodField()
    release = serializers.SerializerMethodField()
    persons = serializers.SerializerMethodField()
    threshold = serializers.SerializerMethodField()
    data_risk = serializers.SerializerMethodField()
    context = serializers.SerializerMethodField()  # type: ignore[assignment]  # a field, popped from the class
    overall = serializers.SerializerMethodField()
    deidentify_config = serializers.SerializerMethodField()
    search = serializers.SerializerMethodField()
    apply = serializers.SerializerMethodField()
    utility = serializers.SerializerMethodField()

    class Meta(AssessmentSummarySerializer.Meta):
        fields = [
            *AssessmentSummarySerializer.Meta.fields,
            "steps",
            "release",
            "persons",
            "threshold",
            "data_risk",
            "context",
            "overall",
            "deidentify_config",
            "search",
            "apply",
            "utility",
        ]
        read_only_fields = fields

    @extend_schema_field(StepStateSerializer(many=True))
    def get_steps(self, obj: Assessment) -> list[dict[str, Any]]:
        return steps_data(obj)

    @extend_schema_field(ReleaseStateSerializer)
    def get_release(self, obj: Assessment) -> dict[str, Any]:
        return release_data(obj)

    @extend_schema_field(PersonsSerializer)
    def get_persons(self, obj: Assessment) -> dict[str, Any]:
        return persons_data(obj, suggest=False)

    @extend_schema_field(ThresholdStateSerializer)
    def get_threshold(self, obj: Assessment) -> dict[str, Any]:
        return threshold_data(obj)

    @extend_schema_field(RiskSerializer)
    def get_data_risk(self, obj: Assessment) -> dict[str, Any]:
        return risk_data(obj)

    @extend_schema_field(ContextSerializer)
    def get_context(self, obj: Assessment) -> dict[str, Any]:
        return context_data(obj)

    @extend_schema_field(OverallSerializer(allow_null=True))
    def get_overall(self, obj: Assessment) -> dict[str, Any] | None:
        return overall_data(obj)

    @extend_schema_field(DeidConfigSerializer)
    def get_deidentify_config(self, obj: Assessment) -> dict[str, Any]:
        return deid_config_data(obj)

    @extend_schema_field(SearchSerializer)
    def get_search(self, obj: Assessment) -> dict[str, Any]:
        return search_data(obj)

    @extend_schema_field(ApplySerializer)
    def get_apply(self, obj: Assessment) -> dict[str, Any]:
        return apply_data(obj)

    @extend_schema_field(UtilitySerializer)
    def get_utility(self, obj: Assessment) -> dict[str, Any]:
        return utility_data(obj)


class AssessmentCreateSerializer(serializers.Serializer[Any]):
    dataset = strict.UUIDField(help_text="A profiled data set of one of your organizations.")
    title = strict.CharField(
        max_length=200,
        allow_blank=True,
        default="",
        help_text="Defaults to “Release of <data set>”.",
    )


class AssessmentViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    StepActions,
    DeidentifyActions,
    ReleaseFormActions,
    ReleaseFileActions,
):
    """Assessments of the caller's organizations, one action per step.

    Reads for any member; writes for analysts and administrators (403 for reviewers);
    another organization's assessment is a 404. Jobs (risk, search, apply) answer 202 with
    the job: poll ``/api/v1/jobs/{id}/`` or the step's GET."""

    serializer_class = AssessmentSerializer
    permission_classes = [OrganizationRole]
    queryset = Assessment.objects.none()  # for the schema; get_queryset scopes every request

    def get_serializer_class(self):  # type: ignore[no-untyped-def]
        return AssessmentSummarySerializer if self.action == "list" else AssessmentSerializer

    # ----------------------------------------------------------------------- collection

    @extend_schema(
        parameters=[AssessmentFilterSerializer], responses=AssessmentSummarySerializer(many=True)
    )
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Assessments of your organizations, newest first."""
        return super().list(request, *args, **kwargs)

    @extend_schema(responses=AssessmentSerializer)
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The whole assessment: every step's inputs and results, the steps' states, Step 6."""
        return super().retrieve(request, *args, **kwargs)

    @extend_schema(request=AssessmentCreateSerializer, responses={201: AssessmentSerializer})
    def create(self, request: Request) -> Response:
        """Start an assessment of a profiled data set (analysts and administrators)."""
        payload = self._payload(AssessmentCreateSerializer)
        dataset = (
            Dataset.objects.filter(
                id=payload.validated_data["dataset"],
                organization__memberships__user=user_of(request),
            )
            .select_related("organization")
            .first()
        )
        if dataset is None:
            raise NotFound("No such data set.")
        if not membership_get(user=request.user, organization=dataset.organization).can_edit:
            raise PermissionDenied("Only analysts and administrators can start an assessment.")
        assessment = services.assessment_create(
            organization=dataset.organization,
            dataset=dataset,
            user=self._user(),
            title=payload.validated_data["title"],
        )
        return Response(AssessmentSerializer(assessment).data, status=status.HTTP_201_CREATED)
