"""Memory the exact search holds per lattice node: sets ``apps.engine.lattice.NODE_BYTES_BASE``.

    .venv/bin/python bench/bench_lattice_memory.py            # the cases below (about 40 min)
    .venv/bin/python bench/bench_lattice_memory.py --quick    # two small lattices
    .venv/bin/python bench/bench_lattice_memory.py --resume FILE   # keep runs measured before

The exact search keeps arrays over the whole lattice (the level matrix, static bounds,
suppression bounds, keys, tie ranks, per-solve status, the queue's order) and memoized facts
of every node it evaluates, besides the memory of its class tables, which is bounded apart
(``search.classes.default_cache_bytes``). Each case runs in a fresh process: a synthetic
problem (random codes, chains of pairwise merges up to ``*``) is built and the kernels warmed
on a small lattice of another problem; then the peak resident memory is reset
(``/proc/self/clear_refs``) and one search runs as the Step 7 job runs it (the Pareto front
included). Bytes per node = (peak during the search - resident memory before it) / nodes.

The node limit is ``memory budget // (NODE_BYTES_BASE + NODE_BYTES_PER_QI * d)``
(``apps.engine.lattice.max_nodes``), the budget a setting (``DEIDWEB_SEARCH_MEMORY_MB``),
NODE_BYTES_BASE the worst bytes per node measured with (almost) every node evaluated.
Results: docs/benchmarks.md, "Memory of the exact search".
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import machine  # noqa: E402 (the root is on sys.path first)

OUT = ROOT / "docs" / "bench" / "lattice_memory.md"

# (quasi-identifiers, levels above the original per QI, rows, suppression limits). At 5 %
# nodes known to fail leave the queue; at 100 % the Pareto front down to nothing suppressed
# evaluates almost every node (the most memory per node; 11 minutes at 1 M nodes here, so
# only on the two smaller lattices).
CASES = [
    (8, 3, 2000, (0.05, 1.0)),  # 4^8 = 65,536 nodes
    (10, 3, 5000, (0.05, 1.0)),  # 4^10 = 1,048,576 nodes
    (13, 2, 5000, (0.05,)),  # 3^13 = 1,594,323 nodes
    (7, 7, 5000, (0.05,)),  # 8^7 = 2,097,152 nodes
]
QUICK = [(8, 3, 2000, (0.05, 1.0)), (10, 2, 2000, (0.05, 1.0))]
METRICS = ("loss", "discernibility")  # discernibility keeps lifted numbers per node too


def _problem(d: int, height: int, rows: int, seed: int):  # type: ignore[no-untyped-def]
    import numpy as np

    from apps.engine.search import build_problem
    from apps.engine.search.problem import QuasiLookup

    values = 2**height
    rng = np.random.default_rng(seed)
    columns = rng.integers(0, values, size=(rows, d)).astype(np.uint32)
    distinct, counts = np.unique(columns, axis=0, return_counts=True)
    maps = [np.arange(values, dtype=np.uint32)]
    for level in range(1, height + 1):
        maps.append((np.arange(values) // 2**level).astype(np.uint32))
    lookups = [QuasiLookup.from_maps(f"q{j}", maps) for j in range(d)]
    return build_problem(
        tuple(f"q{j}" for j in range(d)),
        [distinct[:, j] for j in range(d)],
        counts.astype(np.int64),
        lookups,
    )


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(field)


def child(d: int, height: int, rows: int, metric: str, limit: float, cap: int) -> None:
    from apps.engine.criteria import KAnonymity
    from apps.engine.search import optimal_search

    warm = _problem(4, 2, 200, 1)
    for m in METRICS:
        optimal_search(warm, KAnonymity(5), metric=m, suppression_limit=0.05, pareto=True)
    problem = _problem(d, height, rows, 7)
    caps = {f"q{j}": 0 for j in range(cap, d)}
    before = _status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # peak resident memory := now
    result = optimal_search(
        problem,
        KAnonymity(5),
        metric=metric,
        suppression_limit=limit,
        max_levels=caps or None,
        pareto=True,
    )
    peak = _status("VmHWM")
    print(
        json.dumps(
            {
                "d": d,
                "nodes": result.nodes_total,
                "evaluated": result.nodes_evaluated,
                "metric": metric,
                "limit": limit,
                "seconds": round(result.seconds, 2),
                "bytes": peak - before,
                "bytes_per_node": (peak - before) / result.nodes_total,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs=6)
    parser.add_argument(
        "--resume", help="JSON lines of runs already measured (this script's output): kept"
    )
    args = parser.parse_args()
    if args.child:
        d, height, rows, metric, limit, cap = args.child
        child(int(d), int(height), int(rows), metric, float(limit), int(cap))
        return
    runs = []
    if args.resume:
        for line in Path(args.resume).read_text().splitlines():
            if line.startswith("{"):
                runs.append(json.loads(line))
                print(line, flush=True)
    done = {(r["d"], r["metric"], r["limit"]) for r in runs}
    for d, height, rows, limits in QUICK if args.quick else CASES:
        # Lattices over ~5 M nodes are capped (QIs past `cap` at level 0): the same arrays,
        # fewer nodes, and the dimensions stay d.
        cap = d
        while cap > 0 and (height + 1) ** cap > 5_000_000:
            cap -= 1
        for metric in METRICS:
            for limit in limits:
                if (d, metric, limit) in done:
                    continue
                out = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--child",
                        *map(str, (d, height, rows, metric, limit, cap)),
                    ],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                run = json.loads(out.strip().splitlines()[-1])
                runs.append(run)
                print(json.dumps(run), flush=True)
    # The limit: a node costs what the worst search measured costs per node when it
    # evaluated (almost) every node, everything included (the fixed part too): per QI the
    # level matrix's 2 bytes (int16), the rest the base. A least-squares fit of bytes =
    # fixed + nodes x (a + b x d) + evaluated x c is printed beside it, to read the parts.
    import numpy as np

    features = np.array(
        [[1.0, r["nodes"], r["nodes"] * r["d"], r["evaluated"]] for r in runs], dtype=np.float64
    )
    measured = np.array([r["bytes"] for r in runs], dtype=np.float64)
    (fixed, base, per_qi, facts), *_ = np.linalg.lstsq(features, measured, rcond=None)
    print(
        f"fit: fixed {fixed / 2**20:.1f} MiB; per node {base:.1f} + {per_qi:.2f} x d bytes; "
        f"per evaluated node {facts:.1f} bytes"
    )
    full = [r for r in runs if r["evaluated"] >= 0.85 * r["nodes"] and r["nodes"] >= 1_000_000]
    if not full:
        return
    worst = max(full, key=lambda r: r["bytes_per_node"] - 2 * r["d"])
    print(
        f"worst with every node evaluated: {worst['bytes_per_node']:.0f} bytes per node "
        f"(d = {worst['d']}, {worst['metric']}, {worst['nodes']:,} nodes): "
        f"NODE_BYTES_BASE >= {math.ceil(worst['bytes_per_node'] - 2 * worst['d'])}, "
        "NODE_BYTES_PER_QI = 2"
    )
    if not args.quick:
        _write(runs, worst, facts)


def _write(runs: list[dict[str, Any]], worst: dict[str, Any], facts: float) -> None:
    import datetime as dt
    import platform

    from apps.engine.lattice import NODE_BYTES_BASE, NODE_BYTES_PER_QI, max_nodes

    rows = "\n".join(
        f"| {r['d']} | {r['nodes']:,} | {r['metric']} | {r['limit'] * 100:.0f} % | "
        f"{r['evaluated']:,} | {r['seconds']:.1f} | {r['bytes'] / 2**20:,.0f} | "
        f"{r['bytes_per_node']:.0f} |"
        for r in runs
    )
    OUT.write_text(
        f"""# Memory of the exact search (issue #22)

Generated by `bench/bench_lattice_memory.py` on {dt.date.today().isoformat()}.
Machine: {machine()} (shared with other jobs), Python {platform.python_version()}.

Each case in a fresh process: a synthetic problem (random codes, `d` quasi-identifiers, chains \
of pairwise merges up to `*`), kernels warmed on another problem, the peak resident memory \
reset (`/proc/self/clear_refs`), then one search as the Step 7 job runs it (Pareto front \
included); bytes = peak during the search minus the resident memory before it. k = 5.

| QIs | lattice nodes | metric | suppression | nodes evaluated | search s | MiB | bytes per node |
|---|---|---|---|---|---|---|---|
{rows}

Each evaluated node holds about {facts:.0f} bytes (its memoized facts; least-squares fit \
over the runs); the arrays over every node take the rest, more when more nodes stay in the \
queue. With 100 % suppression allowed the Pareto front runs down to nothing suppressed and \
evaluates almost every node: {worst["bytes_per_node"]:.0f} bytes a node on the \
{worst["nodes"]:,}-node lattice ({worst["d"]} QIs, {worst["metric"]}), every fixed cost \
included. The node limit takes that worst case for every node: \
`apps.engine.lattice.NODE_BYTES_BASE = {NODE_BYTES_BASE}` plus {NODE_BYTES_PER_QI} bytes per \
quasi-identifier (the level matrix), so `max_nodes = DEIDWEB_SEARCH_MEMORY_MB MiB // \
({NODE_BYTES_BASE} + {NODE_BYTES_PER_QI} d)`: with the default 2048 MiB, \
{max_nodes(9, 2048 << 20):,} nodes with 9 quasi-identifiers (the fixed limit was \
2,000,000). The class tables (at most 512 MiB, `search.classes.default_cache_bytes`) and \
the data come on top. Larger lattices get the heuristic search.
"""
    )
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
