"""``load_longitudinal_code`` (run by ``deid warmup`` and before the CLI's clock) covers
every specialization of every longitudinal kernel: in a fresh process, measures and
searches afterwards add no compiled signature, so they load and compile nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = """
import json
import polars as pl
from numba.core.registry import CPUDispatcher
from apps.engine.criteria import KAnonymity, StrictAverageRisk
from apps.engine.hierarchies import suppression_hierarchy
from apps.engine.longitudinal import (
    ALL, DateSpec, EventCountSpec, EventTable, from_tables, measure, optimal_search, prepare,
)
import importlib
from apps.engine.longitudinal.kernels import MODULES
from apps.engine.longitudinal.preload import load_longitudinal_code

def signatures():
    found = {}
    for name in MODULES:
        module = importlib.import_module(f"apps.engine.longitudinal.kernels.{name}")
        for n, o in vars(module).items():
            if isinstance(o, CPUDispatcher) and o.__module__ == module.__name__:
                found[f"{name}.{n}"] = len(o.signatures)
    return found

load_longitudinal_code()
before = signatures()
persons = pl.DataFrame({"pid": list(range(1, 41)), "sex": ["F", "M"] * 20})
events = pl.DataFrame({
    "pid": [1 + i % 37 for i in range(150)],
    "diag": [["I21.0", "E11.9", "J45.9", "I25.1", "C50.9"][i % 5] for i in range(150)],
    "day": [f"2020-{1 + i % 12:02d}-{1 + i % 27:02d}" for i in range(150)],
})
data = from_tables(persons=persons, person_key="pid", person_quasi=["sex"],
                   events=[EventTable("visits", events, "pid", ("diag", "day"))])
problem = prepare(data, hierarchies={"sex": suppression_hierarchy("sex", ["F", "M"]),
    "diag": "icd10"}, dates=DateSpec(("day",), "anchored"), event_count=EventCountSpec(),
    require_hierarchies=True)
for power in (1, 2, 3, 5, ALL):
    measure(problem, power=power)
for criterion in (KAnonymity(3), StrictAverageRisk(0.3, 0.5)):
    optimal_search(problem, criterion, power=2, suppression_limit=0.1, pareto=True)
after = signatures()
print(json.dumps({n: after[n] - before.get(n, 0) for n in after if after[n] != before.get(n, 0)}))
"""


def test_no_kernel_is_compiled_after_preloading() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {}
