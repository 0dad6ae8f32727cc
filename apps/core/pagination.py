"""The one pagination of the API: ``limit`` and ``offset``, checked like any other input."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

from apps.core.api import query_values

MAX_LIMIT = 1000


class _PageQuery(serializers.Serializer[Any]):
    limit = serializers.IntegerField(min_value=1, max_value=MAX_LIMIT, required=False)
    offset = serializers.IntegerField(min_value=0, required=False)


class StrictLimitOffsetPagination(LimitOffsetPagination):
    """DRF's limit/offset, except that a bad value is a 400 naming the parameter.

    DRF falls back to the default for ``limit=abc`` or ``offset=-1`` and passes any limit to
    the database, where one past a bigint fails: a caller paging through a trail would
    silently get a page it did not ask for, or a server error."""

    max_limit = MAX_LIMIT

    def _query(self, request: Request) -> dict[str, int]:
        values = query_values(request)
        query = _PageQuery(
            data={
                name: values[name]
                for name in (self.limit_query_param, self.offset_query_param)
                if name in values
            }
        )
        query.is_valid(raise_exception=True)
        return dict(query.validated_data)

    def get_limit(self, request: Request) -> int | None:
        return self._query(request).get(self.limit_query_param, self.default_limit)

    def get_offset(self, request: Request) -> int:
        return self._query(request).get(self.offset_query_param, 0)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        bounds = {
            self.limit_query_param: {"minimum": 1, "maximum": MAX_LIMIT},
            self.offset_query_param: {"minimum": 0},
        }
        for parameter in parameters:
            parameter["schema"].update(bounds.get(parameter["name"], {}))
        return parameters
