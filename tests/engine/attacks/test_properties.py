"""Properties of the attacks on random releases.

On a k-anonymous release (every released class holds at least k records) the intruder's
exact-match pick is right at most 1 time in k, nobody is singled out, and the figures
are proportions with intervals around them — whatever the data, the generalization, the
seed and the sample size.
"""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine.attacks import (
    EXACT,
    INFERENCE,
    LINKABILITY,
    NEAREST,
    SINGLING_OUT,
    QuasiIdentifier,
    attack_release,
)


@st.composite
def k_anonymous_releases(
    draw: Any,
) -> tuple[pl.DataFrame, pl.DataFrame, list[QuasiIdentifier], int]:
    rows = draw(st.integers(6, 120))
    width = draw(st.integers(1, 3))
    columns: dict[str, list[str | None]] = {}
    quasi = []
    for j in range(width):
        domain = draw(st.integers(1, 8))
        values = draw(
            st.lists(st.one_of(st.none(), st.integers(0, domain - 1)), min_size=rows, max_size=rows)
        )
        columns[f"q{j}"] = [None if v is None else f"v{v}" for v in values]
        # A random grouping of the values (some columns left as they are).
        groups = draw(st.integers(1, domain))
        labels: dict[str | None, str | None] = {
            f"v{v}": f"g{draw(st.integers(0, groups - 1))}" for v in range(domain)
        }
        labels[None] = None
        leave = draw(st.booleans())
        quasi.append(QuasiIdentifier(f"q{j}", None if leave else labels))
    columns["s"] = [f"s{draw(st.integers(0, 2))}" for _ in range(rows)]
    data = pl.DataFrame(columns)
    k = draw(st.integers(2, 5))
    names = [q.column for q in quasi]
    generalized = data.with_columns(q.apply(data[q.column]).alias(q.column) for q in quasi)
    released = generalized.filter(pl.len().over(names) >= k).sample(
        fraction=1.0, shuffle=True, seed=draw(st.integers(0, 99))
    )
    return data, released, quasi, k


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(k_anonymous_releases(), st.integers(0, 2**31), st.integers(1, 40))
def test_k_anonymous_releases_link_at_most_one_in_k(
    case: tuple[pl.DataFrame, pl.DataFrame, list[QuasiIdentifier], int], seed: int, targets: int
) -> None:
    data, released, quasi, k = case
    report = attack_release(
        data, released, quasi=quasi, sensitive=["s"], seed=seed, targets=targets
    )
    exact = report.result(LINKABILITY, EXACT)
    assert exact.attack.rate <= 1 / k + 1e-12
    assert report.result(LINKABILITY, NEAREST).attack.rate <= 1 / k + 1e-12
    assert report.result(SINGLING_OUT, EXACT).attack.rate == 0.0
    assert exact.control.rate == 0.0  # nobody's own record is left to a control person
    for result in report.results:
        for figure in (result.attack, result.control, result.baseline):
            assert 0.0 <= figure.low <= figure.rate <= figure.high <= 1.0
        assert result.attacks == report.targets == min(targets, data.height // 2)
    assert report.result(INFERENCE, "s").attack.trials == report.targets
