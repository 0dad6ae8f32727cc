"""The attacks on a release exactly as the apply step writes it (file, shuffled, masked)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from apps.engine.apply import apply_solution
from apps.engine.attacks import EXACT, INFERENCE, LINKABILITY, QuasiIdentifier, attack_release
from apps.engine.criteria import KAnonymity
from apps.engine.frame import encode
from apps.engine.hierarchies import hierarchy_from_rows
from apps.engine.reading import read_table
from apps.engine.search import problem_from_encoded

AGE = hierarchy_from_rows(
    "age", [[str(a), f"{10 * (a // 10)}-{10 * (a // 10) + 9}", "*"] for a in range(20, 80)]
)
SEX = hierarchy_from_rows("sex", [["F", "*"], ["M", "*"]])


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_written_release_is_attacked_through_its_hierarchies(tmp_path: Path, suffix: str) -> None:
    rng = np.random.default_rng(21)
    rows = 400
    data = pl.DataFrame(
        {
            "name": [f"person {i}" for i in range(rows)],
            "age": [str(v) for v in rng.integers(20, 80, rows)],
            "sex": [["F", "M"][v] for v in rng.integers(0, 2, rows)],
            "diagnosis": [["flu", "asthma", "diabetes"][v] for v in rng.integers(0, 3, rows)],
        }
    )
    encoded = encode(data, ["age", "sex"])
    lookups = [
        AGE.lookup(encoded.dictionaries[0]),
        SEX.lookup(encoded.dictionaries[1]),
    ]
    levels = {"age": 1, "sex": 0}
    out = tmp_path / f"release{suffix}"
    apply_solution(
        data,
        problem=problem_from_encoded(encoded, lookups),
        lookups=lookups,
        dictionaries=list(encoded.dictionaries),
        levels=levels,
        criterion=KAnonymity(10),
        out=out,
        suppression_limit=0.2,
        direct={"name": "remove"},
        seed=3,
    )
    released = read_table(out)
    quasi = [QuasiIdentifier.from_hierarchy(AGE, 1), QuasiIdentifier.from_hierarchy(SEX, 0)]
    report = attack_release(
        data, released, quasi=quasi, sensitive=["diagnosis"], seed=4, targets=150
    )

    # By hand: a person's class (decade, sex) in the original; released when it has 10 or
    # more people, and then the intruder's pick is theirs 1 time in its size.
    classes = [f"{AGE.generalize(a, 1)}|{s}" for a, s in zip(data["age"], data["sex"], strict=True)]
    size = {c: classes.count(c) for c in set(classes)}
    expected = sum(
        1 / size[classes[r]] if size[classes[r]] >= 10 else 0.0 for r in report.attack_rows
    )
    linked = report.result(LINKABILITY, EXACT)
    assert linked.attack.successes == pytest.approx(expected)
    assert linked.attack.rate <= 1 / 10 and linked.control.rate == 0.0
    assert report.release_rows == sum(n for n in size.values() if n >= 10)
    assert report.result(INFERENCE, "diagnosis").attacks == 150
