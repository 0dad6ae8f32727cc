from pathlib import Path

from django.apps import AppConfig
from django.conf import settings

from apps.datasets.scratch import scratch_start


class DatasetsConfig(AppConfig):
    name = "apps.datasets"
    label = "datasets"

    def ready(self) -> None:
        # Every process Django starts — web workers, job workers, commands — keeps its
        # temporary files in a private folder of its own, and first removes what ended
        # processes left there (apps/datasets/scratch.py).
        scratch_start(Path(settings.DEIDWEB_TEMP_DIR))
