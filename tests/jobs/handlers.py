"""Job handlers used by the tests (resolved by dotted path like the real ones)."""

from apps.core.errors import ApplicationError
from apps.jobs.models import Job, JobStatus


def ok(job, context):
    context.progress(50, "half way", force=True)
    return {"squares": [i * i for i in range(job.params.get("n", 0))]}


def boom(job, context):
    return {"x": 1 / 0}


def rule(job, context):
    raise ApplicationError("The column 'age' is empty.")


def cancel_midway(job, context):
    context.progress(10, "started", force=True)
    Job.objects.filter(id=job.id).update(status=JobStatus.CANCELLED)  # as the cancel button does
    context.progress(20, "continuing", force=True)
    return {"never": "stored"}


def runs_too_long(job, context):
    from celery.exceptions import SoftTimeLimitExceeded

    context.progress(10, "started", force=True)
    raise SoftTimeLimitExceeded()  # as Celery raises it inside the task at the soft limit


def slow(job, context):
    """Reports progress for `seconds` (default 1), then succeeds."""
    import time

    deadline = time.monotonic() + float(job.params.get("seconds", 1))
    while time.monotonic() < deadline:
        context.progress(50, "working", force=True)
        time.sleep(0.1)
    return {"done": True}


def allocate(job, context):
    """Takes memory in steps of 16 MB, touching every page, up to `megabytes` (default
    4,096), reporting each step; keeps it until the end, holding all of it for half a
    second (ten of the worker's memory polls) so that the worker sees the whole of it."""
    import time

    held = []
    for step in range(int(job.params.get("megabytes", 4096)) // 16):
        held.append(bytearray(b"x" * (16 * 1024 * 1024)))
        context.progress(min(99, step), f"{(step + 1) * 16} MB", force=True)
    time.sleep(0.5)
    return {"megabytes": 16 * len(held)}


def crash(job, context):
    """The process ends abruptly, as on a fault in native code."""
    import faulthandler
    import os
    import signal

    context.progress(10, "about to crash", force=True)
    faulthandler.disable()  # no traceback dump in the test's output
    os.kill(os.getpid(), signal.SIGSEGV)


def writes_temp_then_waits(job, context):
    """Leaves a file in the temporary folder, then works until stopped."""
    import tempfile
    import time

    with open(tempfile.mktemp(prefix="left-behind-"), "w") as handle:  # noqa: SIM115
        handle.write("personal data")
    context.progress(5, tempfile.gettempdir(), force=True)
    while True:
        time.sleep(0.1)


def pause_first_attempt(job, context):
    """Its first attempt works (reporting 50 %) for two minutes; a later one ends at once."""
    import time

    if job.attempts == 1:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            context.progress(50, "working", force=True)
            time.sleep(0.2)
    return {"attempt": job.attempts}


def polars_group_by(job, context):
    """Counts a generated column by value with polars (its thread pool)."""
    import polars as pl

    frame = pl.DataFrame({"v": [i % 3 for i in range(30_000)]})
    counts = frame.group_by("v").len().sort("v")
    return {"counts": counts["len"].to_list(), "pid": __import__("os").getpid()}


def external_work_then_waits(job, context):
    """Starts "work elsewhere" (a file standing for a Spark job) whose stop writes the file
    `stopped`, then waits in C code (a long sleep) until its process is ended."""
    import time
    from pathlib import Path

    from apps.jobs.context import external_work

    folder = Path(job.params["folder"])

    def stop():
        (folder / "stopped").write_text("interrupted by the cancel")

    with external_work(stop, "the test's outside work was stopped"):
        context.progress(5, "working elsewhere", force=True)
        time.sleep(300)


def external_work_until_stopped(job, context):
    """Run in-process: "work elsewhere" that goes on until its stop is called (as a Spark
    call returns once its job tag is interrupted), then fails as an interrupted pass does."""
    import threading
    from pathlib import Path

    from apps.jobs.context import external_work

    folder = Path(job.params["folder"])
    stopped = threading.Event()

    def stop():
        (folder / "stopped").write_text("interrupted by the cancel")
        stopped.set()

    with external_work(stop, "the test's outside work was stopped"):
        context.progress(5, "working elsewhere", force=True)
        assert stopped.wait(60), "never stopped"
    raise ApplicationError("The pass was interrupted (cancelled).")
