"""Pagination: the API's (``limit`` and ``offset``, checked like any other input) and the
list pages' (``?page=``, `list_page`)."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

from apps.core.api import query_values
from apps.core.fields import QueryIntegerField

MAX_LIMIT = 1000
# Rows of a list page (data sets, assessments, audit events): an office with years of
# releases must not render them all on every visit.
LIST_PAGE_SIZE = 50


def list_page(request: HttpRequest, items: QuerySet[Any], size: int = LIST_PAGE_SIZE) -> Page[Any]:
    """The page of `items` that ``?page=`` asks for (the last one if past the end, the first
    if not a number), as templates/_pages.html links them."""
    return Paginator(items, size).get_page(request.GET.get("page"))


class _PageQuery(serializers.Serializer[Any]):
    limit = QueryIntegerField(min_value=1, max_value=MAX_LIMIT, required=False)
    offset = QueryIntegerField(min_value=0, required=False)


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
