"""What classification announces to the apps above it (subscribed in their ``ready``).

``roles_changed`` — a person changed the roles of a data set's variables; sent inside the
transaction that changes them. ``assessments`` subscribes: results its draft assessments
computed on the old roles become stale.
"""

from __future__ import annotations

from apps.core.hooks import Hook
from apps.datasets.models import Dataset


@Hook.declare
def roles_changed(*, dataset: Dataset) -> None:
    """The roles of ``dataset``'s variables changed (inside the transaction)."""
