from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.api_permissions import OrganizationRole
from apps.accounts.decorators import user_of
from apps.accounts.selectors import membership_get
from apps.classification.models import ClassificationChange, Variable, VariableRole
from apps.classification.selectors import (
    classification_changes_of,
    classification_status,
    suggestion_evidence_shown,
)
from apps.classification.services import (
    RoleDecision,
    identifier_values_shown,
    variables_accept_suggestions,
    variables_classify,
)
from apps.core import fields as strict
from apps.core.api import query_values
from apps.datasets.models import Dataset

RAW_KEYS = ("top_values", "sample_values", "min", "max", "histogram")


class VariableSerializer(serializers.ModelSerializer[Variable]):
    dataset: serializers.PrimaryKeyRelatedField[Dataset] = serializers.PrimaryKeyRelatedField(
        read_only=True
    )
    profile = serializers.SerializerMethodField()
    suggestion_evidence = serializers.SerializerMethodField()

    class Meta:
        model = Variable
        fields = [
            "id",
            "dataset",
            "name",
            "position",
            "inferred_type",
            "profile",
            "suggested_role",
            "suggested_reason",
            "suggestion_confidence",
            "suggestion_evidence",
            "needs_review",
            "role",
            "reason",
            "keep_for_analysis",
            "confirmed_by",
            "confirmed_at",
        ]
        read_only_fields = fields

    def get_suggestion_evidence(self, obj: Variable) -> list[str]:
        return suggestion_evidence_shown(
            variable=obj, raw_values=self.context.get("can_see_raw_values", False)
        )

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_profile(self, obj: Variable) -> dict[str, object]:
        profile: dict[str, object] = obj.profile
        if self.context.get("can_see_raw_values", False):
            return profile
        return {k: v for k, v in profile.items() if k not in RAW_KEYS}


def _record_shown(request: Request, variables: list[Variable]) -> None:
    """Raw values of direct identifiers leave through this API: record it, per data set."""
    by_dataset: dict[Any, tuple[Dataset, list[str]]] = {}
    for variable in variables:
        entry = by_dataset.setdefault(variable.dataset_id, (variable.dataset, []))
        entry[1].append(variable.name)
    for dataset, names in by_dataset.values():
        identifier_values_shown(
            dataset=dataset, user=user_of(request), via="API variables", columns=names
        )


class RoleDecisionSerializer(serializers.Serializer[RoleDecision]):
    role = serializers.ChoiceField(choices=VariableRole.choices)
    reason = strict.CharField(required=False, allow_blank=True, default="")
    keep_for_analysis = strict.BooleanField(required=False, default=False)


class BulkDecisionSerializer(RoleDecisionSerializer):
    variable = strict.UUIDField()


class ClassificationChangeSerializer(serializers.ModelSerializer[ClassificationChange]):
    variable_name = strict.CharField(source="variable.name", read_only=True)
    changed_by = strict.CharField(source="changed_by.username", read_only=True, default=None)

    class Meta:
        model = ClassificationChange
        fields = [
            "id",
            "variable",
            "variable_name",
            "changed_by",
            "created_at",
            "from_role",
            "to_role",
            "reason",
            "keep_for_analysis",
        ]
        read_only_fields = fields


class VariableFilterSerializer(serializers.Serializer[Any]):
    dataset = strict.UUIDField(required=False, help_text="Only this data set.")


@extend_schema_view(list=extend_schema(parameters=[VariableFilterSerializer]))
class VariableViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet[Variable]
):
    """Step 2: the columns of a data set with suggested and confirmed roles.

    Filter by data set with ``?dataset=<id>``. Change a role with ``POST …/{id}/classify/``."""

    serializer_class = VariableSerializer
    permission_classes = [OrganizationRole]
    pagination_class = None
    queryset = Variable.objects.none()  # for the schema; get_queryset scopes every request

    def get_queryset(self) -> QuerySet[Variable]:
        queryset = Variable.objects.filter(organization__memberships__user=user_of(self.request))
        if self.action != "list":
            return queryset
        filters = VariableFilterSerializer(data=query_values(self.request))
        filters.is_valid(raise_exception=True)
        dataset = filters.validated_data.get("dataset")
        return queryset.filter(dataset_id=dataset) if dataset else queryset

    def get_serializer_context(self) -> dict[str, Any]:
        # DRF builds a new dict on every call; the stubs declare it a read-only Mapping.
        context = dict(super().get_serializer_context())
        user = self.request.user
        context["can_see_raw_values"] = (
            user.memberships.filter(role__in=["analyst", "admin"]).exists()
            if user.is_authenticated
            else False
        )
        return context

    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        queryset = self.get_queryset()
        raw_orgs = set(
            user_of(request)
            .memberships.filter(role__in=["analyst", "admin"])
            .values_list("organization_id", flat=True)
        )
        variables = list(queryset.select_related("dataset", "dataset__organization"))
        data = [
            VariableSerializer(
                v, context={"can_see_raw_values": v.organization_id in raw_orgs}
            ).data
            for v in variables
        ]
        _record_shown(request, [v for v in variables if v.organization_id in raw_orgs])
        return Response(data)

    def retrieve(self, request: Request, *args: object, **kwargs: object) -> Response:
        variable = self.get_object()
        membership = membership_get(user=request.user, organization=variable.organization)
        if membership.can_see_raw_values:
            _record_shown(request, [variable])
        return Response(
            VariableSerializer(
                variable, context={"can_see_raw_values": membership.can_see_raw_values}
            ).data
        )

    @extend_schema(request=RoleDecisionSerializer, responses=VariableSerializer)
    @action(detail=True, methods=["post"])
    def classify(self, request: Request, pk: str | None = None) -> Response:
        variable = self.get_object()
        payload = RoleDecisionSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        variables_classify(
            dataset=variable.dataset,
            user=user_of(request),
            decisions=[RoleDecision(variable_id=str(variable.id), **payload.validated_data)],
        )
        variable.refresh_from_db()
        _record_shown(request, [variable])
        return Response(VariableSerializer(variable, context={"can_see_raw_values": True}).data)


class DatasetClassificationViewSet(viewsets.GenericViewSet[Dataset]):
    """Step 2 for a whole data set: status and warnings, bulk decisions, history."""

    permission_classes = [OrganizationRole]
    queryset = Dataset.objects.none()
    # What OPTIONS describes for the writes (the bulk decisions); the lists are not paged.
    serializer_class = BulkDecisionSerializer  # type: ignore[assignment]  # not a Dataset serializer
    pagination_class = None

    def get_queryset(self) -> QuerySet[Dataset]:
        return Dataset.objects.filter(organization__memberships__user=user_of(self.request))

    @extend_schema(responses={200: dict})
    @action(detail=True, methods=["get"])
    def status(self, request: Request, pk: str | None = None) -> Response:
        return Response(classification_status(dataset=self.get_object()))

    @extend_schema(
        request=BulkDecisionSerializer(many=True),
        responses=ClassificationChangeSerializer(many=True),
    )
    @action(detail=True, methods=["post"])
    def decisions(self, request: Request, pk: str | None = None) -> Response:
        dataset = self.get_object()
        payload = BulkDecisionSerializer(data=request.data, many=True)
        payload.is_valid(raise_exception=True)
        changes = variables_classify(
            dataset=dataset,
            user=user_of(request),
            decisions=[
                RoleDecision(
                    variable_id=str(item["variable"]),
                    role=item["role"],
                    reason=item["reason"],
                    keep_for_analysis=item["keep_for_analysis"],
                )
                for item in payload.validated_data
            ],
        )
        return Response(
            ClassificationChangeSerializer(changes, many=True).data, status=status.HTTP_200_OK
        )

    @extend_schema(
        request=None,
        responses=ClassificationChangeSerializer(many=True),
        description="Confirm every unconfirmed high- or medium-confidence suggestion, recorded "
        "as accepted as suggested with its evidence. Low-confidence suggestions and free text "
        "left in the release stay unconfirmed (`to_decide` in the status): decide each with a "
        "typed reason through `decisions` or a variable's `classify`.",
    )
    @action(detail=True, methods=["post"], url_path="accept-suggestions")
    def accept_suggestions(self, request: Request, pk: str | None = None) -> Response:
        changes = variables_accept_suggestions(dataset=self.get_object(), user=user_of(request))
        return Response(ClassificationChangeSerializer(changes, many=True).data)

    @extend_schema(responses=ClassificationChangeSerializer(many=True))
    @action(detail=True, methods=["get"])
    def history(self, request: Request, pk: str | None = None) -> Response:
        changes = classification_changes_of(dataset=self.get_object())
        return Response(ClassificationChangeSerializer(changes, many=True).data)
