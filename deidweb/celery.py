"""The Celery application, configured from Django settings (``CELERY_*``)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deidweb.settings.local")

app = Celery("deidweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
