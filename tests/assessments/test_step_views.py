"""Every step's page is reached through the dispatcher: the step views register themselves
by slug when their modules are imported, and the dispatcher's module imports them itself,
whatever else (urls.py) was imported first."""

from __future__ import annotations

import subprocess
import sys

from apps.assessments.steps import STEPS

IMPORTED_ALONE = (
    "import django; django.setup(); "
    "from apps.assessments import views; "
    "from apps.assessments.views_base import STEP_VIEWS; "
    "print(' '.join(sorted(STEP_VIEWS)))"
)


def test_every_step_has_its_view_once_the_dispatcher_alone_is_imported() -> None:
    # A fresh interpreter: in this one urls.py has imported every module of views already.
    shown = subprocess.run(
        [sys.executable, "-c", IMPORTED_ALONE], capture_output=True, text=True, check=True
    ).stdout.split()
    assert shown == sorted(step.slug for step in STEPS)
