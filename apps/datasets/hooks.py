"""What a data set announces to the apps above it (subscribed in their ``AppConfig.ready``).

``profile_stored`` — the profiling job stored a data set's profile; sent inside the
transaction that stores it, so a subscriber's failure fails the job and stores nothing.
``classification`` subscribes: one variable per column, with its suggested role.

``raw_values_shown`` — a page or an API call showed raw values of the profile (samples, top
values, extremes) to a user. ``classification`` subscribes: it records in the audit trail
which of them were direct identifiers.
"""

from __future__ import annotations

import polars as pl
from django.contrib.auth.models import User

from apps.core.hooks import Hook
from apps.datasets.models import Dataset
from apps.datasets.profiling import DatasetProfile


@Hook.declare
def profile_stored(*, dataset: Dataset, profile: DatasetProfile, sample: pl.DataFrame) -> None:
    """The profile is stored (inside its transaction); ``sample`` holds rows of the file."""


@Hook.declare
def raw_values_shown(*, dataset: Dataset, user: User, via: str) -> None:
    """Raw values of the profile were shown to ``user`` through ``via`` (a page, the API)."""
