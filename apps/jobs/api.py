from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.api_permissions import OrganizationRole
from apps.accounts.decorators import user_of
from apps.accounts.models import Organization
from apps.jobs.cancel_retry import job_cancel, job_retry
from apps.jobs.liveness import live_workers
from apps.jobs.models import Job, JobStatus
from apps.jobs.selectors import job_refresh, job_workers_listening


class JobSerializer(serializers.ModelSerializer[Job]):
    organization: serializers.SlugRelatedField[Organization] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    kind_label = serializers.CharField(
        read_only=True, help_text="What the job does, in words (kind is its key)."
    )
    workers_listening = serializers.SerializerMethodField(
        help_text="For a queued job: how many live workers take its queue (0: none is "
        "running, the job waits until one is started). Null for other jobs."
    )

    def get_workers_listening(self, obj: Job) -> int | None:
        if obj.status != JobStatus.QUEUED:
            return None
        if not hasattr(self, "_live_workers"):  # once per response, not once per job
            self._live_workers = live_workers()
        return job_workers_listening(obj, self._live_workers)

    class Meta:
        model = Job
        fields = [
            "id",
            "organization",
            "kind",
            "kind_label",
            "status",
            "progress",
            "message",
            "subject",
            "params",
            "result",
            "error",
            "created_at",
            "started_at",
            "finished_at",
            "attempts",
            "queue",
            "workers_listening",
        ]
        read_only_fields = fields


class JobViewSet(mixins.RetrieveModelMixin, mixins.ListModelMixin, viewsets.GenericViewSet[Job]):
    """Jobs of the caller's organizations. Poll a job until its status is finished."""

    serializer_class = JobSerializer
    permission_classes = [OrganizationRole]
    queryset = Job.objects.none()  # for the schema; get_queryset scopes every request

    def get_queryset(self) -> QuerySet[Job]:
        return Job.objects.filter(
            organization__memberships__user=user_of(self.request)
        ).select_related("organization")

    def get_object(self) -> Job:
        # A job whose worker died is reported as failed here, as on the job page (no write).
        return job_refresh(super().get_object())

    @extend_schema(request=None, responses=JobSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        job = job_cancel(job=self.get_object(), user=user_of(request))
        return Response(JobSerializer(job).data)

    @extend_schema(request=None, responses=JobSerializer)
    @action(detail=True, methods=["post"])
    def retry(self, request: Request, pk: str | None = None) -> Response:
        job = job_retry(job=self.get_object(), user=user_of(request))
        return Response(JobSerializer(job).data, status=201)
