"""``/api/v1/assessments/{id}/release/cluster-check/``: an approved cluster release checked
against its approved manifest (`apps.reviews.cluster_release`). Mixed into the
assessments' viewset where the API is assembled (``deidweb/urls.py``)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.reviews.cluster_release import cluster_release_verify


class ClusterReleaseActions:
    @extend_schema(
        request=None,
        responses={
            200: dict,
            409: OpenApiResponse(description="A file changed, went missing or was added."),
        },
    )
    @action(
        detail=True,
        methods=["get"],
        url_path="release/cluster-check",
        url_name="release-cluster-check",
    )
    def release_cluster_check(self, request: Request, pk: str | None = None) -> Response:
        """Hash the approved cluster release's files on the cluster again and compare them
        with the manifest the reviewer approved (recorded in the audit trail)."""
        assessment = self.get_object()  # type: ignore[attr-defined]
        return Response(cluster_release_verify(assessment=assessment, user=request.user))
