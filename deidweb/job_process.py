"""A job's process started as a new interpreter by its worker (``apps/jobs/isolation.py``
starts one this way when forking is not safe):

    python -m deidweb.job_process <job id> <private temporary folder> <worker's pid>

It sets Django and the Celery application up as a worker process does, then runs the job
the worker has claimed; the worker watches it as it watches a forked one.
"""

from __future__ import annotations

import os
import sys
from uuid import UUID


def main(argv: list[str]) -> None:
    job_id, scratch, parent = argv
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deidweb.settings.local")
    import django

    django.setup()
    import deidweb.celery  # noqa: F401  (the application a job's follow-up tasks are sent with)
    from apps.jobs.isolation import run_child

    run_child(UUID(job_id), scratch, int(parent), forked=False)


if __name__ == "__main__":
    main(sys.argv[1:])
