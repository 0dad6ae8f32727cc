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

from collections.abc import Callable, Iterable
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.api_permissions import OrganizationRole
from apps.accounts.decorators import user_of
from apps.accounts.models import Membership, Organization
from apps.accounts.selectors import membership_get
from apps.assessments import deidentify, hooks, population, release_apply, services, steps
from apps.assessments.hierarchies import hierarchies_proposed, hierarchy_preview, hierarchy_set
from apps.assessments.models import (
    RELEASE_FIELDS,
    Assessment,
    AssessmentStatus,
    HierarchySpec,
)
from apps.assessments.persons import assessment_set_persons, assessment_set_power, persons_state
from apps.assessments.release_columns import column_findings, columns_reviewed_set
from apps.assessments.selectors import overall_risk
from apps.assessments.serializers import (
    ContextSavedSerializer,
    ContextSerializer,
    OverallBlockSerializer,
    OverallSerializer,
    PersonsSavedSerializer,
    PersonsSerializer,
    ReleaseRequestSerializer,
    ReleaseSavedSerializer,
    ReleaseSerializer,
    ReleaseStateSerializer,
    RiskRunSerializer,
    RiskSerializer,
    StepStateSerializer,
    ThresholdSavedSerializer,
    ThresholdSerializer,
    ThresholdStateSerializer,
    UtilitySavedSerializer,
    UtilitySerializer,
)
from apps.assessments.serializers_deidentify import (
    ApplySerializer,
    ChooseSerializer,
    ColumnFindingSerializer,
    DeidConfigSavedSerializer,
    DeidConfigSerializer,
    HierarchySavedSerializer,
    HierarchySerializer,
    IdentifierFindingSerializer,
    IdentifiersReviewedSerializer,
    PreviewSerializer,
    SearchSavedSerializer,
    SearchSerializer,
)
from apps.assessments.withheld import (
    hierarchy_params_for_role,
    protected_columns,
    rare_values,
    withhold_raw_values,
)
from apps.core import fields as strict
from apps.core.api import query_values
from apps.core.downloads import file_download, no_store
from apps.datasets.models import Dataset, ReleaseModel
from apps.engine import context as engine_context
from apps.engine import threshold as engine_threshold
from apps.jobs.api import JobSerializer
from apps.jobs.models import Job
from apps.jobs.selectors import job_refresh


def _job(job: Job | None) -> Job | None:
    return job_refresh(job) if job is not None else None


def release_data(assessment: Assessment) -> dict[str, Any]:
    fields = (*RELEASE_FIELDS, "effective_release_model")
    threat = assessment.threat_model or {}
    domain = threat.get("pseudonymisation") or {}
    return ReleaseStateSerializer(
        {
            **{f: getattr(assessment, f) for f in fields},
            "recipients": threat.get("recipients") or [],
            "pseudonym_linkers": domain.get("who_can_link", ""),
            "pseudonym_key_kept": domain.get("key_kept", ""),
        }
    ).data


def threshold_data(assessment: Assessment) -> dict[str, Any]:
    from apps.assessments.threshold_profiles import offered_profiles

    answers = assessment.threshold_answers or {}
    return ThresholdStateSerializer(
        {
            "profile": assessment.threshold_profile,
            "mode": assessment.threshold_mode,
            "answers": {key: answers.get(key) for key, _, _ in engine_threshold.INVASION_FACTORS},
            "preset": assessment.threshold_preset,
            "custom_value": assessment.threshold_custom_value,
            "justification": assessment.threshold_justification,
            "result": assessment.threshold_result,
            "profiles": offered_profiles(assessment.effective_release_model),
        }
    ).data


def context_data(assessment: Assessment) -> dict[str, Any]:
    answers = assessment.context_answers or {}
    controls = answers.get("controls") or {}
    motives = answers.get("motives") or {}
    threat = assessment.threat_model or {}
    return ContextSerializer(
        {
            "known_columns": threat.get("known_columns"),
            "target_in_sample": threat.get("target_in_sample") or "known",
            "controls": {k: controls.get(k) for k, _ in engine_context.CONTROLS},
            "motives": {k: motives.get(k) for k, _, _ in engine_context.MOTIVES},
            "prevalence": answers.get("prevalence"),
            "prevalence_source": answers.get("prevalence_source", ""),
            "acquaintances": answers.get("acquaintances") or engine_context.DEFAULT_ACQUAINTANCES,
            "single_sex": bool(answers.get("single_sex", False)),
            "breach_rate": answers.get("breach_rate", engine_context.DEFAULT_BREACH_RATE),
            "breach_source": answers.get("breach_source") or "",
            "release_model": assessment.effective_release_model,
            "result": assessment.context_result,
        }
    ).data


def persons_data(assessment: Assessment, *, suggest: bool = True) -> dict[str, Any]:
    """Step 2's persons block; ``suggest`` reads the data for the suggested levels."""
    return PersonsSerializer(persons_state(assessment, suggest=suggest)).data


def deid_config_data(assessment: Assessment) -> dict[str, Any]:
    config = deidentify.deid_config(assessment).to_json()
    return DeidConfigSerializer(
        {**config, "direct_identifiers": deidentify.direct_identifiers(assessment)}
    ).data


def risk_data(assessment: Assessment) -> dict[str, Any]:
    return RiskSerializer(
        {
            "result": assessment.risk_result,
            "job": _job(assessment.risk_job),
            "population": assessment.population or {},
        }
    ).data


def search_data(assessment: Assessment) -> dict[str, Any]:
    return SearchSerializer(
        {
            "result": assessment.search_result,
            "chosen_levels": assessment.chosen_levels,
            "job": _job(assessment.search_job),
        }
    ).data


def apply_data(assessment: Assessment) -> dict[str, Any]:
    return ApplySerializer(
        {"result": assessment.apply_result, "job": _job(assessment.apply_job)}
    ).data


def utility_data(assessment: Assessment) -> dict[str, Any]:
    return UtilitySerializer(
        {"note": assessment.utility_note, "accepted": assessment.utility_accepted}
    ).data


def overall_data(assessment: Assessment) -> dict[str, Any] | None:
    overall = overall_risk(assessment)
    return OverallSerializer(overall).data if overall is not None else None


def steps_data(assessment: Assessment) -> list[dict[str, Any]]:
    data = []
    for state in steps.step_states(assessment):
        step = state["step"]
        data.append(
            {
                "number": step.number,
                "slug": step.slug,
                "title": step.title,
                "guideline": step.guideline,
                "summary": step.summary,
                "state": state["state"],
                "done": state["done"],
                "stale": state["stale"],
            }
        )
    return data


def hierarchy_data(
    assessment: Assessment, spec: HierarchySpec, *, raw_values: bool
) -> dict[str, Any]:
    """One hierarchy as the API shows it. Its value lists (the ARX table, the groups of a
    categorical one) hold every original value: only for a role allowed raw values; the
    others get the levels' groups as the report shows them (``hierarchy_preview``)."""
    params = hierarchy_params_for_role(spec.kind, spec.params, raw_values=raw_values)
    return HierarchySerializer(
        {
            "column": spec.column,
            "kind": spec.kind,
            "params": params,
            "arx_csv": spec.arx_csv if raw_values else None,
            "height": spec.height,
            "level_labels": spec.level_labels,
            "preview": hierarchy_preview(assessment, spec, raw_values=raw_values),
        }
    ).data


def _stale_states(assessment: Assessment) -> set[str]:
    return {s["step"].slug for s in steps.step_states(assessment) if s["stale"]}


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


class AssessmentFilterSerializer(serializers.Serializer[Any]):
    organization = strict.SlugField(
        required=False, help_text="Short name (slug) of the organization."
    )
    dataset = strict.UUIDField(required=False)


class DownloadSerializer(serializers.Serializer[Any]):
    format = serializers.ChoiceField(choices=["csv", "parquet"], default="csv")


class FileFormatNegotiation(DefaultContentNegotiation):
    """``?format=`` names the release file here, not a renderer: answer errors in JSON."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


def _jsonable(value: object) -> object:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


RUN = {202: JobSerializer}
NO_BODY = None


class AssessmentViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet[Assessment],
):
    """Assessments of the caller's organizations, one action per step.

    Reads for any member; writes for analysts and administrators (403 for reviewers);
    another organization's assessment is a 404. Jobs (risk, search, apply) answer 202 with
    the job: poll ``/api/v1/jobs/{id}/`` or the step's GET."""

    serializer_class = AssessmentSerializer
    permission_classes = [OrganizationRole]
    queryset = Assessment.objects.none()  # for the schema; get_queryset scopes every request

    def get_queryset(self) -> QuerySet[Assessment]:
        queryset = Assessment.objects.filter(
            organization__memberships__user=self._user()
        ).select_related(
            "organization", "dataset", "created_by", "risk_job", "search_job", "apply_job"
        )
        if self.action != "list":
            return queryset
        # A plain dict: DRF reads an empty form value as absent, "?dataset=" is bad input.
        filters = AssessmentFilterSerializer(data=query_values(self.request))
        filters.is_valid(raise_exception=True)
        if "organization" in filters.validated_data:
            queryset = queryset.filter(organization__slug=filters.validated_data["organization"])
        if "dataset" in filters.validated_data:
            queryset = queryset.filter(dataset_id=filters.validated_data["dataset"])
        return queryset

    def get_serializer_class(self):  # type: ignore[no-untyped-def]
        return AssessmentSummarySerializer if self.action == "list" else AssessmentSerializer

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        """Every answer of every action about one assessment, for a role that may not read
        raw values (reviewers): the values of its direct identifiers and free-text columns,
        and its quasi-identifiers' rare values, withheld (``apps.assessments.withheld``),
        whatever the action returned."""
        response = super().finalize_response(request, response, *args, **kwargs)
        data = getattr(response, "data", None)
        if data is None or not 200 <= response.status_code < 300 or "pk" not in self.kwargs:
            return response
        assessment = self.get_queryset().filter(pk=self.kwargs["pk"]).first()
        if assessment is None or self._membership(assessment).can_see_raw_values:
            return response
        record = data.get("variables") if isinstance(data, dict) else None
        protected = protected_columns(assessment, record if isinstance(record, list) else ())
        response.data = withhold_raw_values(data, protected, rare_values(assessment))
        return response

    def _user(self) -> User:
        return user_of(self.request)  # authenticated: OrganizationRole

    def _membership(self, assessment: Assessment) -> Membership:
        return membership_get(user=self.request.user, organization=assessment.organization)

    def _deidentify_step(
        self, assessment: Assessment, action: str, change: Callable[[], object], **details: str
    ) -> list[str]:
        """A Step 7 change, recorded in the audit trail as the page records it; returns the
        steps it made stale."""
        from apps.audit.services import audit_record

        before = _stale_states(assessment)
        with transaction.atomic():
            change()
            audit_record(
                organization=assessment.organization,
                actor=self._user(),
                action=f"assessment.deidentify.{action}",
                obj=assessment,
                details={
                    "deid_config": assessment.deid_config,
                    "chosen_levels": assessment.chosen_levels,
                    "column": details.get("column", ""),
                    "kind": details.get("kind", ""),
                },
            )
        return sorted(_stale_states(assessment) - before, key=lambda s: steps.BY_SLUG[s].number)

    def _audit_download(self, assessment: Assessment, action: str, **details: str) -> None:
        from apps.audit.services import audit_record

        audit_record(
            organization=assessment.organization,
            actor=self._user(),
            action=action,
            obj=assessment,
            details={**details, "version": assessment.version},
        )

    def _payload(self, serializer: type[serializers.Serializer[Any]], **context: Any) -> Any:
        payload = serializer(data=self.request.data, context=context)
        payload.is_valid(raise_exception=True)
        return payload

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

    # ----------------------------------------------------------------------- Step 1

    @extend_schema(methods=["GET"], responses=ReleaseStateSerializer)
    @extend_schema(
        methods=["PUT"], request=ReleaseRequestSerializer, responses=ReleaseSavedSerializer
    )
    @action(detail=True, methods=["get", "put"])
    def release(self, request: Request, pk: str | None = None) -> Response:
        """Step 1: release model and recipient."""
        assessment = self.get_object()
        if request.method == "GET":
            return Response(release_data(assessment))
        payload = self._payload(ReleaseSerializer)
        stale = services.assessment_set_release(
            assessment=assessment, user=self._user(), **payload.validated_data
        )
        return Response({**release_data(assessment), "stale": stale})

    # ----------------------------------------------------------------------- Step 2

    @extend_schema(methods=["GET"], responses=PersonsSerializer)
    @extend_schema(methods=["PUT"], request=PersonsSerializer, responses=PersonsSavedSerializer)
    @action(detail=True, methods=["get", "put"])
    def persons(self, request: Request, pk: str | None = None) -> Response:
        """Step 2, several rows per person: the person key and each quasi-identifier's
        level (person or event), with the levels the data suggests. A person-level column
        that changes within a person is refused, naming the column and persons by their row
        numbers. (The columns' roles are set at ``/api/v1/classification/``.)"""
        assessment = self.get_object()
        if request.method == "GET":
            return Response(persons_data(assessment))
        data = self._payload(PersonsSerializer).validated_data
        stale = assessment_set_persons(
            assessment=assessment,
            user=self._user(),
            person_key=data["person_key"],
            levels=dict(data["levels"]),
        )
        return Response({**persons_data(assessment), "stale": stale})

    # ----------------------------------------------------------------------- Step 3

    @extend_schema(methods=["GET"], responses=ThresholdStateSerializer)
    @extend_schema(methods=["PUT"], request=ThresholdSerializer, responses=ThresholdSavedSerializer)
    @action(detail=True, methods=["get", "put"])
    def threshold(self, request: Request, pk: str | None = None) -> Response:
        """Step 3: the threshold — from the questionnaire, a preset or a custom value (the
        last two need a written justification)."""
        assessment = self.get_object()
        if request.method == "GET":
            return Response(threshold_data(assessment))
        data = self._payload(ThresholdSerializer).validated_data
        stale = services.assessment_set_threshold(
            assessment=assessment,
            user=self._user(),
            profile=data["profile"],
            answers=dict(data["answers"]),
            mode=data["mode"],
            preset=data["preset"],
            custom_value=data["custom_value"],
            justification=data["justification"],
        )
        return Response({**threshold_data(assessment), "stale": stale})

    # ----------------------------------------------------------------------- Step 4

    @extend_schema(methods=["GET"], responses=RiskSerializer)
    @extend_schema(methods=["POST"], request=RiskRunSerializer, responses=RUN)
    @action(detail=True, methods=["get", "post"])
    def risk(self, request: Request, pk: str | None = None) -> Response:
        """Step 4: POST starts measuring the data risk (a job), after setting the population
        the release is a sample of when given; GET shows the result or null, and the last job."""
        assessment = self.get_object()
        if request.method == "GET":
            return Response(risk_data(assessment))
        body = RiskRunSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        if "population" in body.validated_data:
            chosen = body.validated_data["population"]
            population.assessment_set_population(
                assessment=assessment,
                user=self._user(),
                region=chosen.get("region") or "",
                size=chosen.get("size"),
            )
        if "power" in body.validated_data:
            assessment_set_power(
                assessment=assessment, user=self._user(), power=body.validated_data["power"]
            )
        job = services.assessment_start_risk(assessment=assessment, user=self._user())
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    # ----------------------------------------------------------------------- Step 5

    @extend_schema(methods=["GET"], responses=ContextSerializer)
    @extend_schema(methods=["PUT"], request=ContextSerializer, responses=ContextSavedSerializer)
    @action(detail=True, methods=["get", "put"])
    def context(self, request: Request, pk: str | None = None) -> Response:
        """Step 5: the context risk. Controls and motives are required for a non-public
        release (with a data sharing agreement) and ignored otherwise."""
        assessment = self.get_object()
        if request.method == "GET":
            return Response(context_data(assessment))
        payload = self._payload(
            ContextSerializer,
            non_public=assessment.effective_release_model == ReleaseModel.NON_PUBLIC,
        )
        stale = services.assessment_set_context(
            assessment=assessment,
            answers=payload.answers(),
            user=self._user(),
            known_columns=payload.validated_data["known_columns"],
            target_in_sample=payload.validated_data["target_in_sample"],
        )
        return Response({**context_data(assessment), "stale": stale})

    # ----------------------------------------------------------------------- Step 6

    @extend_schema(responses=OverallBlockSerializer)
    @action(detail=True, methods=["get"])
    def overall(self, request: Request, pk: str | None = None) -> Response:
        """Step 6: overall risk = data risk × context risk, against the threshold."""
        return Response({"overall": overall_data(self.get_object())})

    # ----------------------------------------------------------------------- Step 7

    @extend_schema(methods=["GET"], responses=DeidConfigSerializer)
    @extend_schema(
        methods=["PUT"], request=DeidConfigSerializer, responses=DeidConfigSavedSerializer
    )
    @action(
        detail=True,
        methods=["get", "put"],
        url_path="deidentify/config",
        url_name="deidentify-config",
    )
    def deidentify_config(self, request: Request, pk: str | None = None) -> Response:
        """Step 7 settings. Changing the suppression limit, metric or maximum levels drops
        the last search."""
        assessment = self.get_object()
        if request.method == "GET":
            return Response(deid_config_data(assessment))
        payload = self._payload(DeidConfigSerializer)
        stale = self._deidentify_step(
            assessment,
            "config",
            lambda: deidentify.deid_config_save(
                assessment=assessment,
                config=payload.config(base=deidentify.deid_config(assessment)),
            ),
        )
        return Response({**deid_config_data(assessment), "stale": stale})

    @extend_schema(responses=HierarchySerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None)
    def hierarchies(self, request: Request, pk: str | None = None) -> Response:
        """Step 7: the generalization hierarchy of every quasi-identifier with its groups per
        level. For a draft, a quasi-identifier without a saved hierarchy shows the default
        one it would get (saved when the search starts or when it is set); reading changes
        nothing."""
        assessment = self.get_object()
        specs: list[HierarchySpec]
        if assessment.status == "draft":
            specs = list(hierarchies_proposed(assessment=assessment).values())
        else:
            specs = list(HierarchySpec.objects.filter(assessment=assessment))
        raw = self._membership(assessment).can_see_raw_values
        return Response([hierarchy_data(assessment, spec, raw_values=raw) for spec in specs])

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "column", str, OpenApiParameter.PATH, description="A quasi-identifier."
            )
        ],
        request=HierarchySerializer,
        responses=HierarchySavedSerializer,
    )
    @action(
        detail=True,
        methods=["put"],
        url_path=r"hierarchies/(?P<column>[^/]+)",
        url_name="hierarchy",
    )
    def hierarchy(self, request: Request, pk: str | None = None, column: str = "") -> Response:
        """Step 7: set how one quasi-identifier is generalized; the last search is dropped."""
        assessment = self.get_object()
        data = self._payload(HierarchySerializer).validated_data
        stale = self._deidentify_step(
            assessment,
            "hierarchy",
            lambda: hierarchy_set(
                assessment=assessment,
                column=column,
                kind=data["kind"],
                params=dict(data["params"]),
                arx_text=data["arx_text"],
            ),
            column=column,
            kind=data["kind"],
        )
        spec = HierarchySpec.objects.get(assessment=assessment, column=column)
        raw = self._membership(assessment).can_see_raw_values
        return Response({**hierarchy_data(assessment, spec, raw_values=raw), "stale": stale})

    @extend_schema(methods=["GET"], responses=SearchSerializer)
    @extend_schema(methods=["POST"], request=NO_BODY, responses=RUN)
    @action(detail=True, methods=["get", "post"])
    def search(self, request: Request, pk: str | None = None) -> Response:
        """Step 7: POST starts the optimal search (a job); GET shows its result, the chosen
        levels and the last job."""
        assessment = self.get_object()
        if request.method == "GET":
            return Response(search_data(assessment))
        job = deidentify.assessment_start_search(assessment=assessment, user=self._user())
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=ChooseSerializer, responses=SearchSavedSerializer)
    @action(detail=True, methods=["post"])
    def choose(self, request: Request, pk: str | None = None) -> Response:
        """Step 7: choose the optimum or one of the alternatives the search found."""
        assessment = self.get_object()
        levels = dict(self._payload(ChooseSerializer).validated_data["levels"])
        stale = self._deidentify_step(
            assessment,
            "choose",
            lambda: deidentify.assessment_choose_solution(assessment=assessment, levels=levels),
        )
        return Response({**search_data(assessment), "stale": stale})

    @extend_schema(methods=["GET"], responses=IdentifierFindingSerializer(many=True))
    @extend_schema(
        methods=["POST"],
        request=IdentifiersReviewedSerializer,
        responses=IdentifierFindingSerializer(many=True),
    )
    @action(
        detail=True,
        methods=["get", "post"],
        url_path="deidentify/identifiers",
        url_name="deidentify-identifiers",
        pagination_class=None,
    )
    def identifiers(self, request: Request, pk: str | None = None) -> Response:
        """Step 7: released columns in which the free-text detectors still find identifiers.
        Each blocks the submission until it is removed or scrubbed, or until the analyst
        POSTs why what was found is not identifying (shown to the reviewer as an override)."""
        from apps.assessments.freetext import identifier_findings, identifiers_reviewed_set

        assessment = self.get_object()
        if request.method == "POST":
            data = self._payload(IdentifiersReviewedSerializer).validated_data
            identifiers_reviewed_set(
                assessment=assessment,
                user=self._user(),
                column=data["column"],
                reason=data["reason"],
                ground=data.get("ground", ""),
            )
            assessment.refresh_from_db()
        findings = identifier_findings(assessment.apply_result, assessment.deid)
        return Response(IdentifierFindingSerializer(findings, many=True).data)

    @extend_schema(methods=["GET"], responses=ColumnFindingSerializer(many=True))
    @extend_schema(
        methods=["POST"],
        request=IdentifiersReviewedSerializer,
        responses=ColumnFindingSerializer(many=True),
    )
    @action(
        detail=True,
        methods=["get", "post"],
        url_path="deidentify/columns",
        url_name="deidentify-columns",
        pagination_class=None,
    )
    def columns(self, request: Request, pk: str | None = None) -> Response:
        """Step 7: released columns other than the quasi-identifiers, measured as if an
        intruder knew them (small cells, uniques and data risk with them, sensitive values
        they predict). Each blocks the submission until it is treated in Step 2 or 7, or
        until the analyst POSTs why it does not expose anyone (a sentence naming what was
        found, or a ground); a direct identifier released character-masked or scrubbed whose
        values single people out cannot be explained away."""
        assessment = self.get_object()
        if request.method == "POST":
            data = self._payload(IdentifiersReviewedSerializer).validated_data
            columns_reviewed_set(
                assessment=assessment,
                user=self._user(),
                column=data["column"],
                reason=data["reason"],
                ground=data.get("ground", ""),
            )
            assessment.refresh_from_db()
        findings = column_findings(assessment.apply_result, assessment.deid)
        return Response(ColumnFindingSerializer(findings, many=True).data)

    @extend_schema(methods=["GET"], responses=ApplySerializer)
    @extend_schema(methods=["POST"], request=NO_BODY, responses=RUN)
    @action(detail=True, methods=["get", "post"])
    def apply(self, request: Request, pk: str | None = None) -> Response:
        """Step 7: POST writes the de-identified file for the chosen levels (a job); GET
        shows the result (risk before and after, utility) and the last job."""
        assessment = self.get_object()
        if request.method == "GET":
            return Response(apply_data(assessment))
        job = release_apply.assessment_start_apply(assessment=assessment, user=self._user())
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    # ----------------------------------------------------------------------- Step 8

    @extend_schema(methods=["GET"], responses=UtilitySerializer)
    @extend_schema(methods=["PUT"], request=UtilitySerializer, responses=UtilitySavedSerializer)
    @action(detail=True, methods=["get", "put"])
    def utility(self, request: Request, pk: str | None = None) -> Response:
        """Step 8: saving the note accepts the remaining utility for the purpose."""
        assessment = self.get_object()
        if request.method == "GET":
            return Response(utility_data(assessment))
        note = self._payload(UtilitySerializer).validated_data["note"]
        stale = services.assessment_accept_utility(
            assessment=assessment, note=note, user=self._user()
        )
        return Response({**utility_data(assessment), "stale": stale})

    # ----------------------------------------------------------------------- release files

    @extend_schema(responses=PreviewSerializer)
    @action(detail=True, methods=["get"], url_path="release/preview", url_name="release-preview")
    def release_preview(self, request: Request, pk: str | None = None) -> Response:
        """The first 100 rows of the de-identified file (analysts and administrators)."""
        import polars as pl

        from apps.datasets.storage import local_path

        assessment = self.get_object()
        if not self._membership(assessment).can_edit:
            raise PermissionDenied(
                "Only analysts and administrators may preview the de-identified file."
            )
        if not assessment.output_parquet_path:
            raise NotFound("Nothing has been applied yet.")
        with local_path(assessment.output_parquet_path) as path:
            frame = pl.scan_parquet(path).head(100).collect()
        return no_store(
            Response(
                {
                    "columns": frame.columns,
                    "rows": [[_jsonable(v) for v in row] for row in frame.rows()],
                }
            )
        )

    @extend_schema(
        parameters=[DownloadSerializer],
        responses={
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.BINARY, description="The de-identified file."
            ),
            (200, "application/vnd.apache.parquet"): OpenApiResponse(
                OpenApiTypes.BINARY, description="The de-identified file."
            ),
        },
    )
    @action(
        detail=True,
        methods=["get"],
        url_path="release/download",
        url_name="release-download",
        content_negotiation_class=FileFormatNegotiation,
    )
    def release_download(self, request: Request, pk: str | None = None) -> HttpResponseBase:
        """The de-identified file, once a reviewer approved the release (403 before)."""
        assessment = self.get_object()
        query = DownloadSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        released = hooks.release_file_open(
            assessment=assessment, fmt=query.validated_data["format"], user=request.user
        )
        response = file_download(released.handle, filename=released.filename)
        response["X-Content-SHA256"] = released.sha256
        return response

    @extend_schema(
        responses={
            (200, "application/json"): OpenApiResponse(
                OpenApiTypes.BINARY, description="Keys and linking tables (JSON file)."
            )
        },
    )
    @action(detail=True, methods=["get"], url_path="release/secrets", url_name="release-secrets")
    def release_secrets(self, request: Request, pk: str | None = None) -> HttpResponseBase:
        """Keys and linking tables, kept apart from the data: administrators only."""
        assessment = self.get_object()
        if not self._membership(assessment).is_admin:
            raise PermissionDenied(
                "Only the organization's administrators may see keys and linking tables."
            )
        import io

        content = release_apply.release_secrets_read(assessment=assessment)
        response = file_download(
            io.BytesIO(content),
            filename=f"deidweb-{assessment.id}-keys-and-linking-tables.json",
            content_type="application/json",
        )
        self._audit_download(assessment, "download.secrets")
        return response
