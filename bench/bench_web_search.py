"""The search as Step 7's job makes it, a progress listener attached, on adult at 0 %.

    .venv/bin/python bench/bench_web_search.py [--runs 5] [--data DIR]

The web job always passes a listener (``apps/assessments/search_job.py``); before issue
#26 that sent every search to the Python search, the compiled one (``compiled_search.py``)
being taken only without listener, cancel signal or time budget. Per configuration (k in
{2, 5, 11, 20} x metric, no suppression) a fresh problem is built for every run (as the
job does: nothing kept), one warm-up run, then ``--runs`` measured runs of
``optimal_search`` alone, with the listener (a throttled one as ``JobContext.progress``)
and without; medians in milliseconds, the listener's calls, the nodes evaluated.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data" / "arx"
QUASI = [
    "age", "education", "marital-status", "native-country", "occupation", "race",
    "salary-class", "sex", "workclass",
]  # fmt: skip
METRICS = ["loss", "entropy", "precision", "discernibility"]
KS = [2, 5, 11, 20]


class Listener:
    """As the job's: a message formatted each call, written at most once a second."""

    def __init__(self) -> None:
        self.calls = 0
        self.last = 0.0
        self.message = ""

    def __call__(self, progress: object) -> None:
        self.calls += 1
        self.message = (
            f"{progress.nodes_evaluated:,} of {progress.nodes_total:,} generalizations "  # type: ignore[attr-defined]
            f"evaluated; {progress.best_loss}"  # type: ignore[attr-defined]
        )
        now = time.monotonic()
        if now - self.last >= 1.0:
            self.last = now


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--metrics", default=",".join(METRICS))
    parser.add_argument("--ks", default=",".join(map(str, KS)))
    args = parser.parse_args()
    from apps.engine.criteria import KAnonymity
    from apps.engine.hierarchies import read_arx_csv
    from apps.engine.search.optimal import optimal_search
    from apps.engine.search.preload import load_compiled_code
    from apps.engine.search.protocol import build_problem, table_encoder

    load_compiled_code()
    hierarchies = {q: read_arx_csv(str(args.data / f"adult_hierarchy_{q}.csv"), q) for q in QUASI}
    data = pl.read_csv(args.data / "adult.csv", separator=";", infer_schema=False).rechunk()
    encoder = table_encoder(data)
    for metric in args.metrics.split(","):
        for k in map(int, args.ks.split(",")):
            times: dict[str, list[float]] = {"listener": [], "none": []}
            calls, nodes = 0, 0
            for _ in range(1 + args.runs):
                for mode in ("listener", "none"):
                    problem = build_problem(encoder, QUASI, hierarchies, None).problem
                    listener = Listener() if mode == "listener" else None
                    started = time.perf_counter()
                    result = optimal_search(
                        problem, KAnonymity(k), metric=metric, suppression_limit=0.0,
                        progress=listener,
                    )  # fmt: skip
                    times[mode].append(time.perf_counter() - started)
                    if listener is not None:
                        calls, nodes = listener.calls, result.nodes_evaluated
            print(
                json.dumps(
                    {
                        "metric": metric,
                        "k": k,
                        "listener_ms": round(1e3 * statistics.median(times["listener"][1:]), 2),
                        "none_ms": round(1e3 * statistics.median(times["none"][1:]), 2),
                        "calls": calls,
                        "nodes": nodes,
                        "load": round(os.getloadavg()[0], 2),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
