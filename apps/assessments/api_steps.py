"""The assessment API's actions of Steps 1 to 6 and 8 (``StepActions``); Step 7's are in
``api_deidentify.py``, the release files' in ``api_release_files.py``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.assessments import population, services
from apps.assessments.api_base import RUN, AssessmentActions
from apps.assessments.api_blocks import (
    context_data,
    overall_data,
    persons_data,
    release_data,
    risk_data,
    threshold_data,
    utility_data,
)
from apps.assessments.person_dates import assessment_set_dates
from apps.assessments.persons import assessment_set_persons, assessment_set_power
from apps.assessments.serializers import (
    ContextSavedSerializer,
    ContextSerializer,
    OverallBlockSerializer,
    PersonsSavedSerializer,
    PersonsSerializer,
    RiskRunSerializer,
    RiskSerializer,
    ThresholdSavedSerializer,
    ThresholdSerializer,
    ThresholdStateSerializer,
    UtilitySavedSerializer,
    UtilitySerializer,
)
from apps.assessments.serializers_release import (
    ReleaseRequestSerializer,
    ReleaseSavedSerializer,
    ReleaseSerializer,
    ReleaseStateSerializer,
)
from apps.datasets.models import ReleaseModel
from apps.jobs.api import JobSerializer


class StepActions(AssessmentActions):
    """Steps 1 to 6 and Step 8: each step's GET shows its block, its PUT or POST saves it
    (and answers with the later steps it made stale) or starts its job."""

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
        chosen_dates = {
            name: body.validated_data[name]
            for name in ("dates", "event_count")
            if name in body.validated_data
        }
        if chosen_dates:
            assessment_set_dates(assessment=assessment, user=self._user(), settings=chosen_dates)
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
