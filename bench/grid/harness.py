"""The conversation of the grid (bench/bench_grid.py): ARX in its own JVM
(bench/arx/ArxGrid.java) and deidweb's worker (``bench_grid.py --worker``, :func:`worker`)
each parse once and answer one configuration per line; :func:`run_grid` asks them in turn,
each once the other is idle (:func:`quiet`), then times fresh ``deid search`` processes
(*cold*); :func:`measure` records when and under what load a data set was measured.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from typing import IO, Any

import polars as pl

from bench.grid import data
from bench.grid.data import ROOT, WORK, configurations, data_sets
from bench.machine import machine

#: The command line the worker is started with (``--worker``).
ENTRY = ROOT / "bench" / "bench_grid.py"
ARX_HARNESS = ROOT / "bench" / "arx" / "ArxGrid.java"
ARX_BUILD = ROOT / "bench" / "arx" / "build.sh"
#: Fresh `deid search` processes per configuration; *cold* is the median of their
#: `seconds` (one process is one sample of a noisy machine).
COLD_PROCESSES = 3


def worker(name: str, runs: int) -> None:
    """deidweb's side: parse once, then answer one configuration per line of standard
    input with one JSON line (the protocol's runs)."""
    from apps.engine.criteria import KAnonymity
    from apps.engine.hierarchies import read_arx_csv
    from apps.engine.search.preload import load_compiled_code
    from apps.engine.search.protocol import median_of_measured, timed_search

    load_compiled_code()
    path, prefix, quasi = data_sets()[name]
    hierarchies = {q: read_arx_csv(f"{prefix}{q}.csv", q) for q in quasi}
    for hierarchy in hierarchies.values():
        hierarchy.compiled  # noqa: B018 (parsing ends with the hierarchy's arrays)
    data = pl.read_csv(path, separator=";", infer_schema=False).rechunk()
    print("ready", flush=True)
    for line in sys.stdin:
        if not line.strip():
            return
        metric, k, limit = line.strip().split(",")
        seconds = []
        for _ in range(1 + runs):
            # (the previous run's result dropped first, as ARX's harness releases its data
            # handle after every run: nothing of one run lives on into the next)
            run = None
            run = timed_search(
                data,
                quasi,
                hierarchies,
                KAnonymity(int(k)),
                metric=metric,
                suppression_limit=float(limit),
            )
            seconds.append(run.seconds)
        solution = run.result.solution
        print(
            json.dumps(
                {
                    "median": median_of_measured(seconds),
                    "runs": seconds[1:],
                    "warm_up": seconds[0],
                    "loss": None if solution is None else solution.information_loss,
                    "levels": None if solution is None else list(solution.levels),
                    "suppressed": None if solution is None else solution.suppressed_rows,
                    "nodes": run.result.nodes_evaluated,
                    "lattice": run.result.nodes_total,
                    "rows": run.problem.rows,
                    "tuples": len(run.problem.counts),
                }
            ),
            flush=True,
        )


def cold_search(name: str, metric: str, k: int, limit: float) -> float:
    """``seconds`` of a fresh ``deid search`` process (its first, cold run)."""
    path, prefix, quasi = data_sets()[name]
    cmd = [
        sys.executable, "-m", "apps.engine.cli", "search", str(path), "--sep", ";",
        "--quasi", ",".join(quasi),
        *(f"--hierarchy={q}={prefix}{q}.csv" for q in quasi),
        "--k", str(k), "--suppression-limit", str(limit), "--metric", metric,
        "--no-pareto", "--json",
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    return float(json.loads(done.stdout)["seconds"])


def arx_classpath(args: argparse.Namespace) -> str:
    if args.arx_classpath:
        return str(args.arx_classpath)
    if not args.arx_src:
        raise SystemExit(
            "ARX is measured here: give --arx-src (a checkout of arx-deidentifier/arx at "
            "aacd487) or --arx-classpath (ARX compiled); make bench-grid ARX_SRC=..."
        )
    done = subprocess.run(
        ["bash", str(ARX_BUILD), args.arx_src, str(WORK / "arx")],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


class Process:
    """A line-by-line conversation with a helper process (ARX or deidweb's worker)."""

    def __init__(self, cmd: list[str]) -> None:
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        self._read_until("ready")

    def _read_until(self, word: str) -> None:
        out: IO[str] | None = self.proc.stdout
        assert out is not None
        for line in out:
            if line.strip() == word:
                return
        raise RuntimeError(f"{self.proc.args[0]} stopped before it was {word}")

    def ask(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"{self.proc.args[0]} stopped on {line}")
        return answer.strip()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.write("\n")
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def start_arx(classpath: str, name: str, runs: int) -> Process:
    build = WORK / "arx-harness"
    build.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["javac", "-nowarn", "-cp", classpath, "-d", str(build), str(ARX_HARNESS)], check=True
    )
    path, prefix, quasi = data_sets()[name]
    grid = [f"{m},{k},{s}" for m, k, s in configurations()]
    return Process(
        ["java", "-cp", f"{build}{os.pathsep}{classpath}", "ArxGrid", str(path), prefix]
        + [",".join(quasi), str(runs), *grid]
    )


def parse_arx(line: str) -> dict[str, Any]:
    metric, k, limit, score, median, levels, runs = line.split(",", 6)
    return {
        "score": score,
        "median": float(median) / 1000,
        "levels": [int(part.split("=")[1]) for part in levels.split(";")] if levels else None,
        "runs": [float(v) / 1000 for v in runs.split(";")],
    }


def _cpu_ticks(pid: int) -> int:
    """User + system CPU ticks of a process and its threads so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def quiet(*processes: Process, still: float = 0.1, most: float = 2.0) -> None:
    """Wait until the processes use no CPU for ``still`` seconds (at most ``most``): ARX's
    JVM keeps compiling and collecting on its own threads after it has answered, and on
    two cores that took the core the next side's runs were timed on (deidweb's runs on a
    10,000-row table measured up to 2x slower right after ARX's than on their own). Each
    side now starts its runs on a machine the other has left idle, as each would be
    measured alone; both still run in the same minute, under the same load."""
    pids = [p.proc.pid for p in processes]
    deadline = time.monotonic() + most
    last = [_cpu_ticks(pid) for pid in pids]
    since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.02)
        now = [_cpu_ticks(pid) for pid in pids]
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= still:
            return


def combine_turns(turns: list[dict[str, Any]]) -> dict[str, Any]:
    """One side's answers to the same configuration over several turns, as one: the last
    turn's answer (score, levels, nodes, ...), its ``median`` the median of the turns'
    medians, each turn's median in ``turns``, every measured run in ``runs`` (turn after
    turn) and each turn's warm-up run in ``warm_ups`` (deidweb's side only)."""
    combined = dict(turns[-1])
    combined["median"] = statistics.median(turn["median"] for turn in turns)
    combined["turns"] = [turn["median"] for turn in turns]
    combined["runs"] = [run for turn in turns for run in turn["runs"]]
    if "warm_up" in combined:
        combined["warm_ups"] = [turn["warm_up"] for turn in turns]
    return combined


def run_grid(
    name: str, classpath: str, runs: int, cold: bool, turns: int = 1
) -> list[dict[str, Any]]:
    """Each configuration asked of ARX and deidweb in ``turns`` turns (ARX first in even
    turns, deidweb first in odd ones), each turn the protocol whole on each side (one
    warm-up, ``runs`` measured runs, their median), each side's figure the median of its
    turns' medians (:func:`combine_turns`); then the cold processes."""
    arx = start_arx(classpath, name, runs)
    ours = Process(
        [sys.executable, str(ENTRY), "--worker", name, "--runs", str(runs)]
        + ["--arx-data", str(data.ARX)]
        + ([] if data.BENCHMARK is None else ["--benchmark", str(data.BENCHMARK)])
    )
    rows = []
    try:
        for metric, k, limit in configurations():
            config = f"{metric},{k},{limit}"
            arx_turns, our_turns = [], []
            for turn in range(turns):
                for side in ("arx", "ours") if turn % 2 == 0 else ("ours", "arx"):
                    if side == "arx":
                        quiet(ours, arx)
                        arx_turns.append(parse_arx(arx.ask(config)))
                    else:
                        quiet(arx, ours)
                        our_turns.append(json.loads(ours.ask(config)))
            theirs, mine = combine_turns(arx_turns), combine_turns(our_turns)
            row = {"metric": metric, "k": k, "limit": limit, "arx": theirs, **mine}
            colds = [
                cold_search(name, metric, k, limit) for _ in range(COLD_PROCESSES if cold else 0)
            ]
            row["cold"] = statistics.median(colds) if colds else None
            row["colds"] = colds
            print(name, json.dumps(row), flush=True)
            rows.append(row)
    finally:
        ours.close()
        arx.close()
    return rows


def measure(args: argparse.Namespace, name: str, classpath: str) -> dict[str, Any]:
    """One data set's grid, with when and under what load it was measured."""
    started = dt.datetime.now(dt.UTC)
    load_before = os.getloadavg()
    rows = run_grid(name, classpath, args.runs, not args.no_cold, args.turns)
    return {
        "started": f"{started:%Y-%m-%d %H:%M}",
        "load_before": list(load_before),
        "load_after": list(os.getloadavg()),
        "runs": args.runs,
        "turns": args.turns,
        "machine": machine(),
        "idle_wait": True,
        "rows": rows,
    }
