"""deidweb's computation core: encoding, hierarchies, risk, masking and search.

A plain Python package (polars + numpy): it imports nothing from Django, Celery or
DRF so that it runs the same in a worker, a management command or a notebook.
"""

from apps.engine.numba_cache import use_sources_folder

# Before any kernel is declared: numba fixes a kernel's cache folder when it is declared.
use_sources_folder()
