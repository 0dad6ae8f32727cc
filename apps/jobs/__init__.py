"""Jobs: long work (ingest, profiling, risk, search, apply, report) run by Celery workers.

A job's life, module by module:

- ``queueing``: created and its message sent to the queue of its kind;
- ``delivery``, ``scheduling``: a worker given a message runs the fairest queued job of
  that queue;
- ``claiming``: the worker claims it (queued → running), or takes over a running one whose
  worker is gone;
- ``isolation``, ``running``: it runs in a child process the worker watches, to its end
  (succeeded, failed, cancelled), which is recorded with its audit event;
- ``cancel_retry``: the person who started it, or an administrator, cancels or retries it;
- ``lost_jobs``, ``workers``, ``liveness``: workers' heartbeats; a job whose worker is gone
  is run again once, then fails with a message.

Whatever ends a job (success, failure, cancel, a lost worker, a retry), the owner of its
subject learns it through `JOB_FINISHED`/`JOB_RETRIED`, so that a data set never stays
"profiling" after its profiling job is over. The kinds and what each app registers for them
are in ``kinds``, the handler's context in ``context``, the failure messages in
``messages``.
"""
