"""The cluster path in the API (issue #27).

``/api/v1/spark-connection/{organization}/`` — ``GET`` whether the organization has a Spark
connection and its release prefix (any member); ``PUT`` sets it and ``DELETE`` removes it
(administrators). The address and its token are write-only: no answer ever contains them.

``/api/v1/cluster-datasets/`` — ``POST`` registers a table of the organization's cluster as
a data set (analysts and administrators); it answers like an upload, with the profile job.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.decorators import user_of
from apps.accounts.selectors import membership_get
from apps.core import fields as strict
from apps.datasets.api import DatasetSerializer
from apps.datasets.cluster import cluster_dataset_register
from apps.datasets.cluster_connection import (
    spark_connection_clear,
    spark_connection_set,
    spark_connection_status,
)


class ConnectionSerializer(serializers.Serializer[Any]):
    remote = strict.CharField(
        write_only=True,
        allow_blank=True,
        default="",
        max_length=2000,
        help_text="sc://HOST:PORT, with /;token=… when the server asks for one. Write-only; "
        "empty keeps the stored address.",
    )
    release_prefix = strict.CharField(
        max_length=500, help_text="Releases are written only below this cluster path."
    )


class ConnectionStatusSerializer(serializers.Serializer[Any]):
    configured = serializers.BooleanField()
    release_prefix = strict.CharField()
    updated_at = serializers.DateTimeField(allow_null=True)


class ClusterDatasetSerializer(serializers.Serializer[Any]):
    organization = strict.SlugField(help_text="Short name (slug) of the organization.")
    # ("table", not "source": a serializer's own attribute of that name is DRF's)
    table = strict.CharField(
        max_length=500,
        help_text="table:NAME, parquet:PATH, delta:PATH or a Parquet path the cluster reads.",
    )
    name = strict.CharField(required=False, allow_blank=True, default="", max_length=200)
    description = strict.CharField(required=False, allow_blank=True, default="")


class SparkConnectionView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: ConnectionStatusSerializer})
    def get(self, request: Request, org: str) -> Response:
        membership = membership_get(user=request.user, slug=org)
        return Response(spark_connection_status(membership.organization))

    @extend_schema(request=ConnectionSerializer, responses={200: ConnectionStatusSerializer})
    def put(self, request: Request, org: str) -> Response:
        membership = membership_get(user=request.user, slug=org)
        payload = ConnectionSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        spark_connection_set(
            organization=membership.organization,
            user=user_of(request),
            remote=payload.validated_data["remote"],
            release_prefix=payload.validated_data["release_prefix"],
        )
        return Response(spark_connection_status(membership.organization))

    @extend_schema(responses={204: None})
    def delete(self, request: Request, org: str) -> Response:
        membership = membership_get(user=request.user, slug=org)
        spark_connection_clear(organization=membership.organization, user=user_of(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ClusterDatasetView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=ClusterDatasetSerializer, responses={201: DatasetSerializer})
    def post(self, request: Request) -> Response:
        payload = ClusterDatasetSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        membership = membership_get(user=request.user, slug=data["organization"])
        dataset = cluster_dataset_register(
            organization=membership.organization,
            user=user_of(request),
            source=data["table"],
            name=data["name"],
            description=data["description"],
        )
        return Response(DatasetSerializer(dataset).data, status=status.HTTP_201_CREATED)
