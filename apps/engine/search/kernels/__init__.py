"""Compiled inner loops of the search (numba), by concern:

* :mod:`.grouping`: a node's classes grouped from a less general node's (roll-up), and
  their summary under ``k``;
* :mod:`.arena`: the class tables of evaluated nodes cached in one arena, and the
  look-up / roll-up / store of a node in one call (:func:`fetch`);
* :mod:`.rare`: the rows every node certainly suppresses, from single QIs and pairs;
* :mod:`.lattice`: up-sets, down-sets and chains of the lattice, walked as boxes, and
  every node raised to its rare rows;
* :mod:`.search_state`, :mod:`.frontier`, :mod:`.valuation`, :mod:`.probe` and
  :mod:`.solve`: the compiled best-first search: its arrays, its queue, a node's facts
  and value, evaluating and probing nodes, and its loop.

Arrays that travel together are bundled: a problem's inter-level maps
(:class:`LevelMaps`) and the arena's arrays (:class:`Arena`). Every function is checked
against a plain-Python oracle in ``tests/engine/test_kernels.py``; compiled code is
cached on disk per module (``cache=True``), so only the first process after an install
pays for compilation (``cli_warmup.py``).
"""

from apps.engine.search.kernels.arena import (
    BIG_HUB,
    COUNT,
    EPOCH,
    HEAD,
    HIGH,
    LEVEL_ONE,
    MOVES,
    NEXT_SEQ,
    READY_DIRECT,
    READY_HASH,
    SEQ,
    START,
    STATE,
    Arena,
    find_slot,
)
from apps.engine.search.kernels.grouping import (
    CLASSES,
    MIN_RELEASED,
    RELEASED,
    RELEASED_SQUARES,
    SUMMARY,
    SUPPRESSED_ROWS,
    LevelMaps,
    roll_up_group,
    roll_up_levels,
    scratch_size,
    summarize,
)
from apps.engine.search.kernels.lattice import (
    climb_chain,
    raise_by_rare,
    raise_down,
    raise_down_memo,
    raise_up,
    raise_up_memo,
)
from apps.engine.search.kernels.rare import rare_rows
from apps.engine.search.kernels.rollup import fetch

#: The modules holding compiled functions (the warm-up and its tests walk them).
MODULES = (
    "grouping",
    "arena",
    "rollup",
    "rare",
    "lattice",
    "frontier",
    "search_state",
    "valuation",
    "probe",
    "solve",
)

__all__ = [
    "BIG_HUB",
    "CLASSES",
    "COUNT",
    "EPOCH",
    "HEAD",
    "HIGH",
    "LEVEL_ONE",
    "MIN_RELEASED",
    "MODULES",
    "MOVES",
    "NEXT_SEQ",
    "READY_DIRECT",
    "READY_HASH",
    "RELEASED",
    "RELEASED_SQUARES",
    "SEQ",
    "START",
    "STATE",
    "SUMMARY",
    "SUPPRESSED_ROWS",
    "Arena",
    "LevelMaps",
    "climb_chain",
    "fetch",
    "find_slot",
    "raise_by_rare",
    "raise_down",
    "raise_down_memo",
    "raise_up",
    "raise_up_memo",
    "rare_rows",
    "roll_up_group",
    "roll_up_levels",
    "scratch_size",
    "summarize",
]
