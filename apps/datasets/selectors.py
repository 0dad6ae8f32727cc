from __future__ import annotations

from uuid import UUID

from django.db.models import QuerySet
from django.http import Http404

from apps.accounts.models import Organization
from apps.datasets.models import Dataset


def datasets_of(*, organization: Organization) -> QuerySet[Dataset]:
    return Dataset.objects.filter(organization=organization).select_related("profile_job")


def datasets_listed(*, organization: Organization) -> QuerySet[Dataset]:
    """The data sets of a list page, newest first, with only the fields a row shows: the
    profile of a wide file (and the other JSON) is never read to list its name."""
    return Dataset.objects.filter(organization=organization).only(
        "id", "organization", "name", "rows", "column_count", "source_format", "status",
        "created_at",
    )  # fmt: skip


def dataset_get(*, organization: Organization, dataset_id: UUID | str) -> Dataset:
    dataset = datasets_of(organization=organization).filter(id=dataset_id).first()
    if dataset is None:
        raise Http404("No such data set.")
    return dataset
