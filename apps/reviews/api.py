"""The review workflow in the API, with the pages' rules (the services enforce them):
``/api/v1/assessments/{id}/`` ``submit/``, ``comments/``, ``decide/``, ``revise/``,
``decisions/`` and ``record/`` (``report/`` is the reports app's: ``ReportActions``).

Mixed into the assessments' viewset where the API is assembled (``deidweb/urls.py``), so the assessment is looked up among the caller's
organizations (404 otherwise). Any member may call these actions; the service decides what
the role allows (403) and what the version's state allows (409).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.api_permissions import OrganizationMember
from apps.accounts.decorators import user_of
from apps.accounts.selectors import membership_get
from apps.assessments.models import Assessment
from apps.assessments.person_suppression import release_suppression_data
from apps.assessments.withheld import hierarchy_for_role
from apps.core import fields as strict
from apps.reviews.decisions import assessment_revise, review_decide, step_comment_add
from apps.reviews.models import Decision, ReviewDecision, StepComment
from apps.reviews.selectors import comments_of_versions
from apps.reviews.snapshot import assessment_record
from apps.reviews.submissions import assessment_submit

ERRORS = {
    400: OpenApiResponse(description="Bad input: the message names the field."),
    403: OpenApiResponse(description="Your role does not allow it."),
    404: OpenApiResponse(description="No such assessment in your organizations."),
    409: OpenApiResponse(description="The version's state does not allow it (e.g. frozen)."),
}


class VersionSerializer(serializers.ModelSerializer[Assessment]):
    """Where a version stands in the review (the whole assessment: ``GET`` it)."""

    class Meta:
        model = Assessment
        fields = ["id", "title", "version", "status", "previous", "submitted_at", "decided_at"]
        read_only_fields = fields


class SubmitSerializer(serializers.Serializer[Any]):
    note = strict.CharField(help_text="A note for the reviewer.")
    intruder_waiver = strict.CharField(
        allow_blank=True,
        default="",
        help_text="A public release with no motivated-intruder test recorded: why it goes "
        "without one (at least a sentence; kept in the audit trail and the report).",
    )


class CommentSerializer(serializers.ModelSerializer[StepComment]):
    author = strict.CharField(source="author.username", read_only=True, default=None)
    version = strict.IntegerField(source="assessment.version", read_only=True)

    class Meta:
        model = StepComment
        fields = ["id", "assessment", "version", "step", "author", "text", "created_at"]
        read_only_fields = ["id", "assessment", "version", "author", "created_at"]


class CommentCreateSerializer(serializers.Serializer[Any]):
    step = strict.CharField(
        default="general", help_text="A step's slug (e.g. 'threshold') or 'general'."
    )
    text = strict.CharField()


class DecideSerializer(serializers.Serializer[Any]):
    decision = serializers.ChoiceField(choices=Decision.choices)
    reasons = strict.CharField(help_text="The reasons; they go into the signed report.")


class DecisionSerializer(serializers.ModelSerializer[ReviewDecision]):
    reviewer = strict.CharField(source="reviewer.username", read_only=True, default=None)
    report = serializers.SerializerMethodField()

    class Meta:
        model = ReviewDecision
        fields = [
            "id",
            "version",
            "decision",
            "reasons",
            "final",
            "reviewer",
            "figures",
            "digests",
            "report_sha256",
            "snapshot",
            "audit_sequence",
            "audit_hash",
            "report",
            "created_at",
        ]
        read_only_fields = fields

    def get_report(self, obj: ReviewDecision) -> str | None:
        # The report is the reports app's (a higher layer): read through the relation its
        # model declares on the decision.
        report = ReviewDecision.objects.filter(pk=obj.pk).values_list("report", flat=True).first()
        return str(report) if report else None


class RecordHierarchySerializer(serializers.Serializer[Any]):
    """A frozen hierarchy as a role allowed raw values reads it."""

    column = strict.CharField()
    kind = strict.CharField()
    kind_label = strict.CharField(required=False)
    params = serializers.DictField()
    arx_csv = strict.CharField(
        allow_blank=True,
        required=False,
        help_text="Every original value with its generalizations (analysts and "
        "administrators only; left out of a reviewer's answer).",
    )
    height = strict.IntegerField()
    level_labels = serializers.ListField(child=strict.CharField())


class ReviewerRecordHierarchySerializer(RecordHierarchySerializer):
    """A frozen hierarchy as a reviewer reads it: its levels, not its values (the groups of
    each level, rare values withheld, are in ``…/hierarchies/``)."""

    arx_csv = None  # type: ignore[assignment]


class RecordSerializer(serializers.Serializer[Any]):
    """The record as a role allowed raw values (analysts, administrators) reads it."""

    frozen = strict.BooleanField(help_text="False for a draft: the live rows.")
    snapshot = strict.UUIDField(allow_null=True)
    sha256 = strict.CharField(allow_blank=True, help_text="SHA-256 of the frozen record.")
    taken_at = serializers.DateTimeField(allow_null=True)
    variables = serializers.ListField(child=serializers.DictField())
    hierarchies = RecordHierarchySerializer(many=True)
    files = serializers.DictField()
    applied = serializers.DictField(allow_null=True)
    person_suppression = serializers.DictField(
        allow_null=True,
        help_text="Person-level release: what was suppressed, read from the stored figures "
        "with the words of their counting ('events_counted_once', or 'legacy'); null at "
        "record level.",
    )


class ReviewerRecordSerializer(RecordSerializer):
    """The record as a reviewer reads it: hierarchies without their ARX tables; the values
    of direct identifiers, free text and rare quasi-identifier values withheld from the
    rest (``AssessmentViewSet.finalize_response``)."""

    hierarchies = ReviewerRecordHierarchySerializer(many=True)


class ReviewActions:
    """The review actions of ``AssessmentViewSet`` (``get_object`` comes from it)."""

    get_object: Any

    @extend_schema(request=SubmitSerializer, responses={200: VersionSerializer, **ERRORS})
    @action(detail=True, methods=["post"], permission_classes=[OrganizationMember])
    def submit(self, request: Request, pk: str | None = None) -> Response:
        """Submit a complete draft for review: its record is frozen, reviewers are told."""
        assessment = self.get_object()
        payload = SubmitSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        assessment_submit(
            assessment=assessment,
            user=user_of(request),
            note=payload.validated_data["note"],
            intruder_waiver=payload.validated_data["intruder_waiver"],
        )
        assessment.refresh_from_db()
        return Response(VersionSerializer(assessment).data)

    @extend_schema(methods=["GET"], responses={200: CommentSerializer(many=True), 404: ERRORS[404]})
    @extend_schema(
        methods=["POST"],
        request=CommentCreateSerializer,
        responses={201: CommentSerializer, **ERRORS},
    )
    @action(
        detail=True,
        methods=["get", "post"],
        permission_classes=[OrganizationMember],
        pagination_class=None,
    )
    def comments(self, request: Request, pk: str | None = None) -> Response:
        """Reviewers' comments on this version and the versions before it; POST adds one
        (reviewers and administrators, while the version is under review)."""
        assessment = self.get_object()
        if request.method == "GET":
            return Response(CommentSerializer(comments_of_versions(assessment), many=True).data)
        payload = CommentCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        comment = step_comment_add(
            assessment=assessment, author=user_of(request), **payload.validated_data
        )
        return Response(CommentSerializer(comment).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=DecideSerializer, responses={201: DecisionSerializer, **ERRORS})
    @action(detail=True, methods=["post"], permission_classes=[OrganizationMember])
    def decide(self, request: Request, pk: str | None = None) -> Response:
        """Approve or reject the submitted version, with reasons (reviewers and
        administrators; never the submitter)."""
        assessment = self.get_object()
        payload = DecideSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        decision = review_decide(
            assessment=assessment, reviewer=user_of(request), **payload.validated_data
        )
        return Response(DecisionSerializer(decision).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={201: VersionSerializer, **ERRORS})
    @action(detail=True, methods=["post"], permission_classes=[OrganizationMember])
    def revise(self, request: Request, pk: str | None = None) -> Response:
        """Start a new draft version of a decided one; the decided version stays as it was."""
        new = assessment_revise(assessment=self.get_object(), user=user_of(request))
        return Response(VersionSerializer(new).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: DecisionSerializer(many=True), 404: ERRORS[404]})
    @action(
        detail=True, methods=["get"], permission_classes=[OrganizationMember], pagination_class=None
    )
    def decisions(self, request: Request, pk: str | None = None) -> Response:
        """The review decisions on this version, with what each rested on."""
        assessment = self.get_object()
        rows = ReviewDecision.objects.filter(assessment=assessment).select_related("reviewer")
        return Response(DecisionSerializer(rows.order_by("created_at"), many=True).data)

    # One schema for both: a reviewer's answer is the analyst's without ``arx_csv``.
    @extend_schema(responses={200: RecordSerializer, 404: ERRORS[404]})
    @action(detail=True, methods=["get"], permission_classes=[OrganizationMember])
    def record(self, request: Request, pk: str | None = None) -> Response:
        """What a decision on this version rests on: the record frozen at submission (the
        live rows while it is a draft). One serializer per role: a reviewer's has no
        hierarchy's ARX table and no raw value (``ReviewerRecordSerializer``)."""
        assessment: Assessment = self.get_object()
        record = assessment_record(assessment)
        snapshot = record.snapshot
        raw = membership_get(
            user=request.user, organization=assessment.organization
        ).can_see_raw_values
        serializer = RecordSerializer if raw else ReviewerRecordSerializer
        return Response(
            serializer(
                {
                    "frozen": record.frozen,
                    "snapshot": snapshot.id if snapshot else None,
                    "sha256": snapshot.sha256 if snapshot else "",
                    "taken_at": snapshot.created_at if snapshot else None,
                    "variables": record.variables,
                    "hierarchies": [
                        hierarchy_for_role(h, raw_values=raw) for h in record.hierarchies
                    ],
                    "files": record.files,
                    "applied": record.assessment.apply_result,
                    "person_suppression": release_suppression_data(record.assessment.apply_result),
                }
            ).data
        )
