"""CPU of ``released.settle`` next to the kernel's evaluation, on nodes with suppressed events.

    .venv/bin/python bench/bench_settle.py                  # 20,000 persons, three nodes
    .venv/bin/python bench/bench_settle.py --persons 100000 --runs 5

The data is ``bench_longitudinal``'s (bench/longitudinal/data.py: seeded, generated into
/tmp): a person table and about ten hospital visits per person. Each node is evaluated at
power 3, k = 5, 5 % of events and 5 % of persons: the kernel's event and person phases,
then ``settle`` (the released event count regrouped), each timed in CPU seconds (the
median of ``--runs``).
The nodes hold the event count at a level where suppressed events change it.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: Nodes (levels by name) whose kernel suppresses events and whose settle regroups.
NODES = (
    {"sex": 0, "birth_year": 2, "region": 1, "event_count": 0, "anchor": 4, "diag": 4, "admission": 3},
    {"sex": 0, "birth_year": 3, "region": 1, "event_count": 1, "anchor": 1, "diag": 4, "admission": 4},
    {"sex": 1, "birth_year": 3, "region": 0, "event_count": 1, "anchor": 2, "diag": 4, "admission": 4},
)  # fmt: skip


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--persons", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()

    from apps.engine.longitudinal import Workspace, kernels
    from apps.engine.longitudinal.evaluate import kernel_power
    from apps.engine.longitudinal.released import settle
    from bench.longitudinal.data import generate, read_problem

    problem, _ = read_problem(*generate(args.persons))
    space = Workspace(problem)
    power, k = kernel_power(3), 5
    events, persons = problem.events // 20, problem.persons // 20
    print(f"{problem.persons:,} persons, {problem.events:,} events; power 3, k = {k}")
    for levels in NODES:
        node = problem.levels_of(levels)
        classes, features = space.classes(node), space.features(node)
        kernel_s, settle_s = [], []
        for _ in range(args.runs):
            started = cpu_s()
            kk, alive, removed, stats = kernels.evaluate(
                classes.order,
                classes.starts,
                classes.position,
                features.offsets,
                features.features,
                features.events,
                features.count,
                power,
                k,
                events,
                persons,
            )
            kernel_s.append(cpu_s() - started)
            started = cpu_s()
            settle(
                problem, space.base, node, classes, features, power, k, kk, alive, removed,
                stats, persons,
            )  # fmt: skip
            settle_s.append(cpu_s() - started)
        print(
            f"{levels}: events suppressed {stats[kernels.EVENTS_SUPPRESSED]:,}, persons "
            f"suppressed {stats[kernels.PERSONS_SUPPRESSED]:,}; CPU median: kernel "
            f"{statistics.median(kernel_s):.4f} s, settle {statistics.median(settle_s):.4f} s"
        )


if __name__ == "__main__":
    main()
