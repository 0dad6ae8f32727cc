from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.api_permissions import OrganizationRole
from apps.accounts.decorators import user_of
from apps.accounts.models import Organization
from apps.accounts.selectors import membership_get
from apps.core import fields as strict
from apps.core.downloads import no_store
from apps.core.errors import ApplicationError
from apps.core.schema import DESCRIPTIONS, ORGANIZATION_FILTER
from apps.datasets import hooks
from apps.datasets.models import Dataset, ReleaseModel
from apps.datasets.services import dataset_delete, dataset_preview, dataset_upload
from apps.datasets.table_upload import dataset_upload_tables
from apps.jobs.models import Job


class DatasetTableSerializer(serializers.Serializer[dict[str, object]]):
    """One table of a person table and event tables uploaded together."""

    name = serializers.CharField(help_text="The file's name.")
    role = serializers.ChoiceField(choices=["person", "event"])
    rows = serializers.IntegerField()
    columns = serializers.ListField(child=serializers.CharField())
    event_columns = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="An event table's own columns (not the key, not the person table's).",
    )
    first_row = serializers.IntegerField(
        required=False, help_text="An event table's first row in the joined table (1-based)."
    )
    sha256 = serializers.CharField(required=False)


class DatasetTablesSerializer(serializers.Serializer[dict[str, object]]):
    """How a person table and event tables uploaded together make the data set."""

    person_key = serializers.CharField()
    tables = DatasetTableSerializer(many=True)
    persons = serializers.IntegerField()
    events = serializers.IntegerField()
    persons_without_events = serializers.IntegerField()
    rows = serializers.IntegerField(help_text="Rows of the joined table.")


class DatasetSerializer(serializers.ModelSerializer[Dataset]):
    organization: serializers.SlugRelatedField[Organization] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    profile_job: serializers.PrimaryKeyRelatedField[Job] = serializers.PrimaryKeyRelatedField(
        read_only=True
    )
    tables = serializers.SerializerMethodField(
        help_text="For a person table and event tables uploaded together: the person key and "
        "each table's name, role, rows, columns and digest (profiles at …/profile/)."
    )
    intended_release_model = serializers.ChoiceField(
        choices=ReleaseModel.choices,
        allow_blank=True,
        read_only=True,
        help_text="As said in Step 2; empty until then.",
    )

    class Meta:
        model = Dataset
        fields = [
            "id",
            "organization",
            "name",
            "description",
            "original_filename",
            "source_format",
            "size_bytes",
            "sha256",
            "parquet_sha256",
            "rows",
            "column_count",
            "delimiter",
            "encoding",
            "sheet",
            "ingest_warnings",
            "status",
            "profile_job",
            "intended_release_model",
            "tables",
            "created_at",
        ]
        read_only_fields = fields

    @extend_schema_field(DatasetTablesSerializer(allow_null=True))
    def get_tables(self, dataset: Dataset) -> dict[str, object] | None:
        structure = dataset.table_structure or {}
        if not structure.get("tables"):
            return None
        shown = ("name", "role", "rows", "columns", "event_columns", "first_row", "sha256")
        return {
            **{k: v for k, v in structure.items() if k != "tables"},
            "tables": [{k: t[k] for k in shown if k in t} for t in structure["tables"]],
        }


class DatasetUploadSerializer(serializers.Serializer[Dataset]):
    organization = strict.SlugField(help_text="Short name (slug) of the organization.")
    file = serializers.FileField(allow_empty_file=True)
    name = strict.CharField(required=False, allow_blank=True, default="", max_length=200)
    description = strict.CharField(required=False, allow_blank=True, default="")
    delimiter = strict.CharField(required=False, allow_blank=True, default="", max_length=4)
    encoding = strict.CharField(required=False, allow_blank=True, default="", max_length=40)
    sheet = strict.CharField(required=False, allow_blank=True, default="", max_length=100)


class DatasetTablesUploadSerializer(serializers.Serializer[Dataset]):
    organization = strict.SlugField(help_text="Short name (slug) of the organization.")
    persons = serializers.FileField(allow_empty_file=True, help_text="The person table.")
    events = serializers.ListField(
        child=serializers.FileField(allow_empty_file=True),
        min_length=1,
        help_text="One or more event tables (repeat the field).",
    )
    person_key = strict.CharField(max_length=300, help_text="The column linking the tables.")
    name = strict.CharField(required=False, allow_blank=True, default="", max_length=200)
    description = strict.CharField(required=False, allow_blank=True, default="")


@extend_schema_view(list=extend_schema(parameters=[ORGANIZATION_FILTER]))
class DatasetViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet[Dataset],
):
    """Data sets of the caller's organizations. Upload with multipart/form-data.

    An upload answers 201 once the file is stored, with ``status`` "converting" and the
    ``profile_job`` that reads the file into Parquet and profiles it: poll that job. A file
    the job cannot read fails it with the message in ``error`` and the details (``code``,
    ``line``, ``column``) in ``result.error``; the data set's status is then "failed".
    """

    serializer_class = DatasetSerializer
    permission_classes = [OrganizationRole]
    queryset = Dataset.objects.none()  # for the schema; get_queryset scopes every request
    parser_classes = [MultiPartParser, FormParser]  # an upload is a file

    def get_queryset(self) -> QuerySet[Dataset]:
        queryset = Dataset.objects.filter(
            organization__memberships__user=user_of(self.request)
        ).select_related("organization")
        org = self.request.query_params.get("organization")
        return queryset.filter(organization__slug=org) if org else queryset

    @extend_schema(
        request={"multipart/form-data": DatasetUploadSerializer},
        responses={201: DatasetSerializer, 413: OpenApiResponse(description=DESCRIPTIONS["413"])},
    )
    def create(self, request: Request) -> Response:
        request.data  # noqa: B018  # parse the body: the upload handler may refuse the file
        refused = getattr(request._request, "upload_refused", None)
        if refused:
            return Response(
                {
                    "message": "The file is larger than the upload limit; nothing was saved.",
                    "extra": {"code": "too_large", **refused},
                },
                status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            )
        payload = DatasetUploadSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        organization = Organization.objects.filter(slug=data["organization"]).first()
        if organization is None:
            raise NotFound("No such organization.")
        membership = membership_get(user=request.user, organization=organization)
        if not membership.can_edit:
            raise PermissionDenied("Only analysts and administrators can upload data sets.")
        dataset = dataset_upload(
            organization=organization,
            user=user_of(request),
            upload=data["file"],
            name=data["name"],
            description=data["description"],
            delimiter=data["delimiter"],
            encoding=data["encoding"],
            sheet=data["sheet"],
        )
        return Response(DatasetSerializer(dataset).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request={"multipart/form-data": DatasetTablesUploadSerializer},
        responses={201: DatasetSerializer, 413: OpenApiResponse(description=DESCRIPTIONS["413"])},
    )
    @action(detail=False, methods=["post"])
    def tables(self, request: Request) -> Response:
        """A person table and one or more event tables linked by a person key, uploaded
        together. Answers 201 with the data set "converting"; its ``profile_job`` reads
        each table, profiles it, checks and joins them (a refusal fails the job, naming the
        table, the column and the rows), then profiles the joined long table."""
        request.data  # noqa: B018  # parse the body: the upload handler may refuse the files
        refused = getattr(request._request, "upload_refused", None)
        if refused:
            return Response(
                {
                    "message": "The files are larger than the upload limit; nothing was saved.",
                    "extra": {"code": "too_large", **refused},
                },
                status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            )
        payload = DatasetTablesUploadSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        organization = Organization.objects.filter(slug=data["organization"]).first()
        if organization is None:
            raise NotFound("No such organization.")
        if not membership_get(user=request.user, organization=organization).can_edit:
            raise PermissionDenied("Only analysts and administrators can upload data sets.")
        dataset = dataset_upload_tables(
            organization=organization,
            user=user_of(request),
            persons=data["persons"],
            events=list(data["events"]),
            person_key=data["person_key"],
            name=data["name"],
            description=data["description"],
        )
        return Response(DatasetSerializer(dataset).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: Dataset) -> None:
        dataset_delete(dataset=instance, user=user_of(self.request))

    @extend_schema(responses={200: dict})
    @action(detail=True, methods=["get"])
    def profile(self, request: Request, pk: str | None = None) -> Response:
        """The profile: rows, and per column type, missing, distinct, extremes, histogram.

        Sample and top values are left out for callers who may not see raw values."""
        dataset = self.get_object()
        if dataset.profile is None:
            raise ApplicationError(
                "The profile is not ready yet; poll the profiling job.",
                {"job": str(dataset.profile_job_id)},
            )
        membership = membership_get(user=request.user, organization=dataset.organization)
        profile = dataset.profile
        tables = (dataset.table_structure or {}).get("tables", [])
        if tables:  # each uploaded table's own profile beside the joined one's
            profile = {
                **profile,
                "tables": [{"name": t["name"], "role": t["role"], **t["profile"]} for t in tables],
            }
        if not membership.can_see_raw_values:
            profile = redact_profile(profile)
        else:
            hooks.raw_values_shown.send(dataset=dataset, user=user_of(request), via="API profile")
        return Response(profile)

    @extend_schema(responses={200: dict})
    @action(detail=True, methods=["get"])
    def preview(self, request: Request, pk: str | None = None) -> Response:
        """The first 100 rows, for analysts and administrators only."""
        dataset = self.get_object()
        membership = membership_get(user=request.user, organization=dataset.organization)
        if not membership.can_see_raw_values:
            raise PermissionDenied("Only analysts and administrators may see raw values.")
        frame = dataset_preview(dataset=dataset, user=user_of(request), limit=100)
        return no_store(
            Response(
                {
                    "columns": frame.columns,
                    "rows": [list(map(_jsonable, row)) for row in frame.rows()],
                }
            )
        )


def _jsonable(value: object) -> object:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


RAW_KEYS = ("top_values", "sample_values", "min", "max", "histogram")


def redact_profile(profile: dict[str, object]) -> dict[str, object]:
    columns = []
    for column in profile.get("columns", []):  # type: ignore[attr-defined]
        columns.append({k: v for k, v in column.items() if k not in RAW_KEYS})
    redacted: dict[str, object] = {**profile, "columns": columns}
    if "tables" in profile:
        redacted["tables"] = [redact_profile(t) for t in profile["tables"]]  # type: ignore[attr-defined]
    return redacted
