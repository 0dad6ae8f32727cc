"""`python -m apps.engine measure …` is the same as `python -m apps.engine.cli measure …`."""

import sys

from apps.engine.cli import main

sys.exit(main())
