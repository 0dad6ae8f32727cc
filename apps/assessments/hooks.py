"""What the assessments' pages and API call in the apps above them (provided in their
``AppConfig.ready``).

``submission_blockers`` — provided by ``reviews``: what stands between a draft and its
submission (the overview page lists it).

``release_file_open`` — provided by ``reviews``: the approved release file, checked against
the approving decision's digest (the release's download, page and API).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from django.contrib.auth.models import AnonymousUser, User

from apps.assessments.models import Assessment
from apps.core.hooks import Provided


@dataclass
class ReleaseFile:
    handle: IO[bytes]
    filename: str
    sha256: str
    size: int


@Provided.declare
def submission_blockers(assessment: Assessment) -> list[str]:
    """What stands between ``assessment`` and a submission, in the method's words."""
    raise NotImplementedError


@Provided.declare
def release_file_open(
    *, assessment: Assessment, fmt: str, user: User | AnonymousUser | None, file: str = ""
) -> ReleaseFile:
    """The approved release file in ``fmt`` (csv, parquet; zip: every file of the release),
    or the release's file named ``file`` (a linked-tables release's table), ready to serve."""
    raise NotImplementedError
