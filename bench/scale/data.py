"""What the scale bench measures (bench/bench_scale.py): its steps, the search's settings
(k, suppression limit, metric), ARX's adult data it draws from (../shared/data/arx), and
the data set itself (:func:`step_generate`): N seeded rows, a record number and the 9
quasi-identifiers of adult as text, written chunk by chunk into one Parquet file (never the
whole frame in memory), then streamed out as the CSV a custodian would upload.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.grid.data import ADULT_QUASI

ROOT = Path(__file__).resolve().parents[2]
ARX = ROOT.parent / "shared" / "data" / "arx"
QUASI = ADULT_QUASI
STEPS = ["generate", "upload", "profile", "measure", "search", "apply"]
K = 5
SUPPRESSION = 0.05
METRIC = "loss"


def step_generate(data: Path, rows: int, chunk_rows: int, seed: int) -> dict[str, Any]:
    """Write `rows` rows to `data`, `chunk_rows` at a time (memory: one chunk)."""
    import numpy as np
    import polars as pl
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    base = pl.read_csv(ARX / "adult.csv", separator=";", infer_schema=False).select(QUASI)
    columns = [base.get_column(q).to_arrow().cast(pa.string()) for q in QUASI]
    tmp = data.with_suffix(".part")
    schema = pa.schema([("record_id", pa.int64()), *((q, pa.string()) for q in QUASI)])
    with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
        for number, start in enumerate(range(0, rows, chunk_rows)):
            n = min(chunk_rows, rows - start)
            rng = np.random.default_rng([seed, number])
            picked = rng.integers(0, base.height, n)
            which = rng.integers(0, len(QUASI), n)
            hit = rng.random(n) < 0.5
            arrays = [pa.array(np.arange(start, start + n, dtype=np.int64))]
            for j, values in enumerate(columns):
                index = picked.copy()
                mask = hit & (which == j)
                index[mask] = rng.integers(0, base.height, int(mask.sum()))
                arrays.append(pc.take(values, pa.array(index)))
            table = pa.Table.from_arrays(arrays, schema=schema)
            writer.write_table(table, row_group_size=1_000_000)
            del arrays, table
    # The file a custodian would upload: the same rows as CSV text, written by streaming.
    csv_tmp = data.with_suffix(".csv.part")
    pl.scan_parquet(tmp).sink_csv(csv_tmp)
    csv_tmp.rename(data.with_suffix(".csv"))
    tmp.rename(data)
    return {
        "rows": rows,
        "file_mib": data.stat().st_size / 1024**2,
        "csv_mib": data.with_suffix(".csv").stat().st_size / 1024**2,
    }
