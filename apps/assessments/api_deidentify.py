"""The assessment API's Step 7 actions (``DeidentifyActions``): settings, hierarchies, search,
choice, the released columns' findings and the apply job."""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.assessments import deidentify, release_apply, steps
from apps.assessments.api_base import NO_BODY, RUN, AssessmentActions
from apps.assessments.api_blocks import (
    apply_data,
    deid_config_data,
    hierarchy_data,
    search_data,
    stale_states,
)
from apps.assessments.freetext import identifier_findings, identifiers_reviewed_set
from apps.assessments.hierarchies import hierarchies_proposed, hierarchy_set
from apps.assessments.models import Assessment, HierarchySpec
from apps.assessments.release_columns import column_findings, columns_reviewed_set
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
    SearchSavedSerializer,
    SearchSerializer,
)
from apps.audit.services import audit_record
from apps.jobs.api import JobSerializer


class DeidentifyActions(AssessmentActions):
    """Step 7: the settings, the hierarchies, the search and the choice of a solution, the
    apply job, and the released columns' findings the analyst answers. Every change is
    recorded in the audit trail as the page records it."""

    def _deidentify_step(
        self, assessment: Assessment, action: str, change: Callable[[], object], **details: str
    ) -> list[str]:
        """A Step 7 change, recorded in the audit trail as the page records it; returns the
        steps it made stale."""
        before = stale_states(assessment)
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
        return sorted(stale_states(assessment) - before, key=lambda s: steps.BY_SLUG[s].number)

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
