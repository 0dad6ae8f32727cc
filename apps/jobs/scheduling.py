"""Which queued job a worker runs next: the fairest of its queue, not the oldest.

Each queued job has one message in its queue; a message is a turn on that queue, not an
order to run the job it names. Given one, a worker runs the queued job of the same queue
that is fairest: first the organization with the fewest jobs running on the queue, then
the one that started a job there least recently (one that never did comes first), then the
one whose oldest job has waited longest; within the organization, the same between its
members; then the member's oldest job. One analyst's 35 jobs, or another organization's
burst of applies, thus take turns with everyone else's instead of going first. Every
message runs one queued job while there are any, so no job is left without a turn: the
messages of a queue always number at least its queued jobs.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db.models import Max

from apps.jobs.claiming import job_claim
from apps.jobs.models import Job, JobStatus

# The fairest among this many oldest queued jobs of a queue (enough to reach every waiting
# organization in practice; the count keeps each choice quick).
CANDIDATES = 1000
_NEVER = dt.datetime.min.replace(tzinfo=dt.UTC)


@dataclass(frozen=True)
class _Queued:
    id: UUID
    organization_id: UUID
    created_by_id: Any
    created_at: dt.datetime


def fairest_queued(queue: str) -> UUID | None:
    """The id of the queued job of `queue` to run next (see the module's rule)."""
    queued = [
        _Queued(*row)
        for row in Job.objects.filter(status=JobStatus.QUEUED, queue=queue)
        .order_by("created_at")
        .values_list("id", "organization_id", "created_by_id", "created_at")[:CANDIDATES]
    ]
    if not queued:
        return None
    organizations = {q.organization_id for q in queued}
    on_queue = Job.objects.filter(queue=queue, organization_id__in=organizations)
    running_org: Counter[Any] = Counter()
    running_user: Counter[Any] = Counter()
    for org, user in on_queue.filter(status=JobStatus.RUNNING).values_list(
        "organization_id", "created_by_id"
    ):
        running_org[org] += 1
        running_user[org, user] += 1
    last_org: dict[Any, dt.datetime] = {}
    last_user: dict[Any, dt.datetime] = {}
    for row in (
        on_queue.filter(started_at__isnull=False)
        .values("organization_id", "created_by_id")
        .annotate(last=Max("started_at"))
    ):
        org, user = row["organization_id"], row["created_by_id"]
        last_org[org] = max(last_org.get(org, _NEVER), row["last"])
        last_user[org, user] = row["last"]

    by_org: dict[Any, list[_Queued]] = {}
    for q in queued:
        by_org.setdefault(q.organization_id, []).append(q)
    chosen = min(
        by_org,
        key=lambda o: (running_org[o], last_org.get(o, _NEVER), by_org[o][0].created_at),
    )
    by_user: dict[Any, list[_Queued]] = {}
    for q in by_org[chosen]:
        by_user.setdefault(q.created_by_id, []).append(q)
    user = min(
        by_user,
        key=lambda u: (
            running_user[chosen, u],
            last_user.get((chosen, u), _NEVER),
            by_user[u][0].created_at,
        ),
    )
    return by_user[user][0].id


def job_claim_fairest(queue: str, me: str) -> Job | None:
    """Claim for `me` the fairest queued job of `queue`; None when none is queued."""
    for _ in range(10):  # another worker may claim the chosen one first: choose again
        job_id = fairest_queued(queue)
        if job_id is None:
            return None
        job = job_claim(str(job_id), me)
        if job is not None:
            return job
    return None
