"""The jobs' settings: Celery and its broker, queues, time and memory limits, workers'
heartbeats."""

from kombu.entity import Exchange, Queue

from .env import default_job_memory_limit, env_bool, env_broker_url, env_int, env_size, env_str
from .paths import VAR_DIR

# Celery: the broker only carries job ids; every result lives on the Job row.
CELERY_BROKER_URL = env_broker_url("CELERY_BROKER_URL", "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
CELERY_BROKER_TRANSPORT: str | None = None  # the URL's own transport
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = VAR_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "store_processed": False,
        # Where fanout exchanges (revoke, ping) live; kombu's default is ./control.
        "control_folder": str(_broker_dir / "control"),
        # Look for new jobs every 0.2 s (kombu's default of 1 s is most of a short job's wait).
        "polling_interval": 0.2,
    }
    # kombu's filesystem transport, made safe for a web process and workers together: a
    # message is written under a temporary name and renamed into the queue, so a worker
    # never reads one half written, and a malformed one is set aside, not fatal.
    CELERY_BROKER_TRANSPORT = "apps.jobs.broker:FilesystemTransport"
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "deidweb")
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A job running longer than this is stopped: first inside the task (the job fails with a
# message), a minute later by ending the worker child.
DEIDWEB_JOB_TIME_LIMIT = env_int("DEIDWEB_JOB_TIME_LIMIT", 6 * 3600, minimum=60)
CELERY_TASK_SOFT_TIME_LIMIT = DEIDWEB_JOB_TIME_LIMIT
CELERY_TASK_TIME_LIMIT = DEIDWEB_JOB_TIME_LIMIT + 60
# Tasks are acknowledged only when the job has ended, and given back to the broker when the
# worker process running them dies, so another worker runs the job again (job_execute
# decides: once, if the worker that claimed it is gone). Each worker process takes one job
# at a time and reserves no other. Redis gives an unacknowledged task to another worker
# after the visibility timeout: it must be longer than the longest job, or a job still
# running would be delivered again (job_execute would see its worker alive and skip it).
CELERY_TASK_REJECT_ON_WORKER_LOST = True
DEIDWEB_BROKER_VISIBILITY_TIMEOUT = env_int(
    "DEIDWEB_BROKER_VISIBILITY_TIMEOUT", CELERY_TASK_TIME_LIMIT + 3600, minimum=1
)
# How often a worker looks for tasks whose visibility timeout has passed (seconds).
DEIDWEB_BROKER_RESTORE_INTERVAL = env_int("DEIDWEB_BROKER_RESTORE_INTERVAL", 10, minimum=1)


def redis_transport_options() -> dict[str, object]:
    return {
        "visibility_timeout": DEIDWEB_BROKER_VISIBILITY_TIMEOUT,
        "unacked_restore_interval": DEIDWEB_BROKER_RESTORE_INTERVAL,
        "unacked_restore_throttle": 1,
    }


if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CELERY_BROKER_TRANSPORT_OPTIONS = redis_transport_options()
# A job whose worker was lost is run again until it has been started this many times.
DEIDWEB_JOB_MAX_ATTEMPTS = env_int("DEIDWEB_JOB_MAX_ATTEMPTS", 2, minimum=1)
# Queues by kind of job (apps.jobs.kinds.job_queue): risk and search are interactive,
# ingest, profile, apply and report heavy. They are declared, so a worker started without
# `-Q` (`celery -A deidweb worker`) consumes every one; a deployment can keep some workers
# for the interactive queue alone (`celery worker -Q interactive`).
DEIDWEB_JOB_QUEUES = {
    "interactive": env_str("DEIDWEB_INTERACTIVE_QUEUE", "interactive"),
    "heavy": env_str("DEIDWEB_HEAVY_QUEUE", "heavy"),
}
CELERY_TASK_QUEUES = [
    Queue(name, Exchange(name), routing_key=name)  # type: ignore[no-untyped-call]
    for name in dict.fromkeys([CELERY_TASK_DEFAULT_QUEUE, *DEIDWEB_JOB_QUEUES.values()])
]
# Each worker writes a heartbeat this often (seconds) and is taken for dead when none came
# for DEIDWEB_WORKER_LOST_SECONDS: a running job of a dead worker is run again at once
# (or fails, DEIDWEB_JOB_MAX_ATTEMPTS), by any live worker (apps.jobs.workers).
DEIDWEB_WORKER_HEARTBEAT_SECONDS = env_int("DEIDWEB_WORKER_HEARTBEAT_SECONDS", 2, minimum=1)
DEIDWEB_WORKER_LOST_SECONDS = env_int("DEIDWEB_WORKER_LOST_SECONDS", 10, minimum=3)
# A queued job that has waited this long says on its page whether a worker takes its queue.
DEIDWEB_JOB_WAIT_NOTICE_SECONDS = env_int("DEIDWEB_JOB_WAIT_NOTICE_SECONDS", 5, minimum=1)
# A queued job still waiting after this long while a worker of its queue sits idle has lost
# its message (taken by a worker that died or hung): a live worker sends it again.
DEIDWEB_JOB_REDISPATCH_SECONDS = env_int("DEIDWEB_JOB_REDISPATCH_SECONDS", 30, minimum=5)
# Jobs a member may have queued or running at once among the long ones (upload reading,
# profiling, apply): the next is refused with a message until one ends.
DEIDWEB_JOB_USER_HEAVY_LIMIT = env_int("DEIDWEB_JOB_USER_HEAVY_LIMIT", 3, minimum=1)
# A worker runs each job in a child process of its own (apps.jobs.isolation), whose memory
# it watches: past this ceiling the job fails with a message and the worker goes on.
# Default: half the memory of the machine, or of the container's memory limit.
DEIDWEB_JOB_ISOLATION = env_bool("DEIDWEB_JOB_ISOLATION", True)
DEIDWEB_JOB_MEMORY_LIMIT = env_size("DEIDWEB_JOB_MEMORY_LIMIT", default_job_memory_limit())
# kind → dotted path of a handler replacing the built-in one (the tests slow some down).
DEIDWEB_JOB_HANDLERS: dict[str, str] = {}
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]

# A running job whose worker cannot be checked (run in-process on another machine, or
# claimed before workers recorded heartbeats) is taken as lost after this long without
# progress; others are known alive or dead by their worker (apps.jobs.liveness).
DEIDWEB_JOB_STALE_SECONDS = env_int("DEIDWEB_JOB_STALE_SECONDS", 600, minimum=30)
