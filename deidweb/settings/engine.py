"""The engine's settings: numba's cache of the compiled kernels, the search's memory."""

import os

from .env import env_int
from .paths import VAR_DIR

# numba's on-disk cache of the engine's compiled kernels, filled by `manage.py deid warmup`
# at install: under var/, which stays writable where the sources are not (the Docker image
# runs as a user who does not own them, and numba refuses to compile a cached kernel it
# cannot cache). The root: when the engine is first imported, after the settings, it points
# numba at the folder of its sources' digest under it (apps/engine/numba_cache.py).
os.environ.setdefault("NUMBA_CACHE_DIR", str(VAR_DIR / "numba"))

# Memory the exact search's lattice may take in a worker (its class tables, at most 512 MiB,
# come on top): larger lattices get the heuristic search. The node limit follows from the
# measured bytes per node (apps.engine.lattice.NODE_BYTES_BASE): 2048 MiB hold 3.47 M nodes
# with 9 quasi-identifiers (the fixed limit was 2 M).
DEIDWEB_SEARCH_MEMORY_MB = env_int("DEIDWEB_SEARCH_MEMORY_MB", 2048, minimum=64)
