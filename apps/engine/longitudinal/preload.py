"""Load the longitudinal kernels' compiled code before a command starts its clock.

The kernels (``kernels/``) are compiled by numba and cached on disk; a process loads
their machine code on first use. :func:`load_longitudinal_code` measures and searches a
tiny problem (person-level and event-level QIs, every kind of power, with suppression), so
that every specialization a real measure or search uses is loaded (or, in the first
process after an install, compiled and cached: ``deid warmup`` calls it).
"""

from __future__ import annotations

import functools

import polars as pl

from apps.engine.criteria import KAnonymity
from apps.engine.hierarchies import Hierarchy
from apps.engine.longitudinal.data import from_long_table
from apps.engine.longitudinal.evaluate import Workspace
from apps.engine.longitudinal.formulas import ALL
from apps.engine.longitudinal.problem import prepare
from apps.engine.longitudinal.search import optimal_search


@functools.cache
def load_longitudinal_code() -> None:
    """Load (or compile) every longitudinal kernel; once per process."""
    rows = [
        (p, s, c)
        for p, s in (("1", "F"), ("2", "F"), ("3", "F"), ("4", "M"))
        for c in "ABC"[: int(p) % 3 + 1]
    ]
    frame = pl.DataFrame(
        {"pid": [r[0] for r in rows], "sex": [r[1] for r in rows], "code": [r[2] for r in rows]}
    )
    data = from_long_table(frame, person="pid", person_quasi=["sex"], event_quasi=["code"])
    problem = prepare(
        data,
        hierarchies={
            "sex": Hierarchy("sex", (("F", "*"), ("M", "*"))),
            "code": Hierarchy("code", (("A", "*"), ("B", "*"), ("C", "*"))),
        },
    )
    space = Workspace(problem)
    for power in (1, 2, ALL):
        space.counts((0, 0), power)
        space.evaluate((0, 0), power=power, k=2, event_budget=1, person_budget=1)
    optimal_search(problem, KAnonymity(2), power=2, suppression_limit=0.5, pareto=True)
