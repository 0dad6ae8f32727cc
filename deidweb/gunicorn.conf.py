"""Gunicorn settings for the web process (Dockerfile, docker-compose.yml, bench/bench_load.py).

    gunicorn -c deidweb/gunicorn.conf.py deidweb.wsgi:application

Every value can be overridden on the command line or by GUNICORN_CMD_ARGS; the worker and
thread counts also by WEB_CONCURRENCY and WEB_THREADS.

- Threaded workers (gthread): a slow client (an upload over a slow link, a long download)
  holds one thread, not a whole worker, and idle keep-alive connections wait in the
  worker's poller without holding a thread.
- Keep-alive of 75 s, longer than a user's pause between two clicks or two polls of a job
  page: with gunicorn's default of 2 s the server closes idle connections so often that a
  client sending its next request on one just as it closes gets "connection reset" (the
  load test saw 62 such failures). 75 s is also nginx's default, so a proxy in front of
  deidweb keeps its own idle connections no longer than the app does.
- Timeout 60 s: uploads are streamed to storage and converted by a worker job, downloads
  are streamed, so no request needs longer (it was 300 s while uploads were converted in
  the request).
- Each worker loads the URL configuration (which imports the engine: polars, numba) before
  it accepts its first request, so that no user waits for those imports.
"""

from __future__ import annotations

import os
from typing import Any

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
worker_class = "gthread"
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
threads = int(os.environ.get("WEB_THREADS", "4"))
keepalive = 75
timeout = 60
graceful_timeout = 30
# A worker is replaced after about this many requests (jittered so that they do not all
# restart at once): memory that a long-lived process fragments is given back.
max_requests = 5000
max_requests_jitter = 500
accesslog = "-" if os.environ.get("GUNICORN_ACCESS_LOG", "").lower() in ("1", "true") else None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()


def post_worker_init(worker: Any) -> None:
    """Load the URL configuration (and the engine it imports) before the first request."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - the attribute access loads every URL module
