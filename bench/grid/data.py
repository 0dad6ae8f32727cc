"""What the grid measures (bench/bench_grid.py): its configurations (k x suppression limit
x metric, or the ``--configs`` subset) and its data sets: ARX's adult (../shared/data/arx,
or ``--arx-data``), the seeded cup-like case this bench generates
(:func:`generate_cup_like`), and with ``--benchmark DIR`` every data set of ARX's benchmark
found there (:func:`benchmark_sets`).

``ARX``, ``BENCHMARK`` and ``SUBSET`` are set once by the command line
(bench/bench_grid.py ``main``) before anything is measured; read them as ``data.NAME``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[2]
ARX = ROOT.parent / "shared" / "data" / "arx"
WORK = Path("/tmp/deidweb-bench-grid")
METRICS = ["loss", "entropy", "precision", "discernibility"]
KS = [2, 5, 11, 20]
LIMITS = [0.0, 0.05]
ADULT_QUASI = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
    "salary-class",
]
CUP_QUASI = ["age", "gender", "income", "minramnt", "ngiftall", "numchld", "state", "zip"]


#: ``--benchmark DIR``: more data sets of ARX's benchmark, laid out as ARX's benchmark
#: code reads them (``DIR/data/NAME.csv``, ``DIR/hierarchies/NAME_hierarchy_COLUMN.csv``,
#: ';'-separated), every column a quasi-identifier. They are not in this repository (ARX
#: keeps them out for licensing reasons), so they are measured against ARX run here.
BENCHMARK: Path | None = None


def _use_arx_data(folder: Path) -> None:
    global ARX
    ARX = folder


def benchmark_sets() -> dict[str, tuple[Path, str, list[str]]]:
    """The data sets of ``--benchmark``: every NAME.csv whose columns all have a hierarchy
    (ARX's adult is measured against ARX's published figures instead). NAME_subset (a
    sample of NAME, with NAME's hierarchies: ARX's benchmark has adult_subset of 3,016
    rows, cup_subset, fars_subset...) is a data set of its own: on a small table the fixed
    cost of a run weighs most, so it is measured beside NAME."""
    if BENCHMARK is None:
        return {}
    found = {}
    for path in sorted((BENCHMARK / "data").glob("*.csv")):
        name = path.stem
        base = name.removesuffix("_subset")
        prefix = str(BENCHMARK / "hierarchies" / f"{base}_hierarchy_")
        with path.open(encoding="utf-8") as f:
            columns = f.readline().strip().split(";")
        if name != "adult" and all(Path(f"{prefix}{c}.csv").exists() for c in columns):
            found[name] = (path, prefix, columns)
    return found


def data_sets() -> dict[str, tuple[Path, str, list[str]]]:
    """name -> (data file, hierarchy file prefix, quasi-identifiers)."""
    return {
        "adult": (ARX / "adult.csv", str(ARX / "adult_hierarchy_"), ADULT_QUASI),
        "cup-like": (WORK / "cup_like.csv", str(WORK / "cup_like_hierarchy_"), CUP_QUASI),
        **benchmark_sets(),
    }


#: ``--configs`` (a subset of the grid, for trying the bench); None: the whole grid.
SUBSET: list[tuple[str, int, float]] | None = None


def configurations() -> Iterator[tuple[str, int, float]]:
    for metric in METRICS:
        for k in KS:
            for limit in LIMITS:
                if SUBSET is None or (metric, k, limit) in SUBSET:
                    yield metric, k, limit


def _band(value: int, width: int) -> str:
    low = value - value % width
    return f"{low}-{low + width - 1}"


def generate_cup_like(rows: int = 60_000, seed: int = 26) -> None:
    """The synthetic case, in ARX's formats (';', hierarchies without header):

    * zip: 5-digit codes; hierarchy over all 100,000 codes, 6 levels (5, 4, 3, 2, 1
      digits kept, then ``*****``); drawn Zipf-like (weights 1/r^0.6 in a random order);
    * state: 55 states, each ZIP's by its first two digits (as ZIP prefixes go with
      states), some rows elsewhere; hierarchy state, region (3), ``*``;
    * minramnt: 0-4,999 (hierarchy over all 5,000: value, 100s, 1,000s, ``*``), mostly
      small (geometric), 2 % anywhere;
    * age 18-98 (hierarchy over 0-99: value, 5 years, 20 years, ``*``), normal around 55;
    * ngiftall 1-299 (hierarchy over 0-299: value, tens, ``*``), geometric;
    * gender F, M, U, J; income 1-7; numchld 0-7 (value, ``*`` each).

    The lattice has 6,912 nodes; nearly every row is a distinct tuple."""
    path = data_sets()["cup-like"][0]
    if path.exists():
        return
    WORK.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)

    def write(name: str, rows_: list[tuple[str, ...]]) -> None:
        text = "".join(";".join(r) + "\n" for r in rows_)
        (WORK / f"cup_like_hierarchy_{name}.csv").write_text(text)

    zips = [f"{i:05d}" for i in range(100_000)]
    write(
        "zip",
        [(z, z[:4] + "*", z[:3] + "**", z[:2] + "***", z[:1] + "****", "*****") for z in zips],
    )
    states = [f"S{i:02d}" for i in range(55)]
    write("state", [(s, f"region {i % 3}", "*") for i, s in enumerate(states)])
    write("minramnt", [(str(v), _band(v, 100), _band(v, 1000), "*") for v in range(5000)])
    write("age", [(str(v), _band(v, 5), _band(v, 20), "*") for v in range(100)])
    write("ngiftall", [(str(v), _band(v, 10), "*") for v in range(300)])
    write("gender", [(g, "*") for g in ("F", "M", "U", "J")])
    write("income", [(str(v), "*") for v in range(1, 8)])
    write("numchld", [(str(v), "*") for v in range(8)])
    weights = 1.0 / np.arange(1, 100_001) ** 0.6
    weights = weights[rng.permutation(100_000)]
    zip_codes = rng.choice(100_000, size=rows, p=weights / weights.sum())
    state_of_prefix = rng.integers(0, 55, 100)
    state = state_of_prefix[zip_codes // 1000]
    elsewhere = rng.random(rows) < 0.03
    state[elsewhere] = rng.integers(0, 55, int(elsewhere.sum()))
    amount = np.minimum(rng.geometric(1 / 15, rows) - 1 + 5 * rng.integers(0, 3, rows), 4999)
    large = rng.random(rows) < 0.02
    amount[large] = rng.integers(100, 5000, int(large.sum()))
    frame = pl.DataFrame(
        {
            "age": np.clip(rng.normal(55, 16, rows).round(), 18, 98).astype(int).astype(str),
            "gender": rng.choice(["F", "M", "U", "J"], rows, p=[0.55, 0.4, 0.04, 0.01]),
            "income": rng.integers(1, 8, rows).astype(str),
            "minramnt": amount.astype(str),
            "ngiftall": np.minimum(rng.geometric(1 / 10, rows), 299).astype(str),
            "numchld": rng.choice(
                8, rows, p=[0.55, 0.15, 0.12, 0.08, 0.05, 0.03, 0.01, 0.01]
            ).astype(str),
            "state": [states[i] for i in state],
            "zip": [zips[i] for i in zip_codes],
        }
    )
    frame.write_csv(path, separator=";")
