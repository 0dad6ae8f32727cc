"""Population uniqueness: the three estimates and Dankar et al.'s decision rule.

Dankar, El Emam, Neisa & Roffey, "Estimating the re-identification risk of clinical
data sets", BMC Med Inform Decis Mak 12:66 (2012); ARX `RiskModelPopulationUniqueness`.
A release that is a sample (a survey, an extract) of a population of N people has
f = n/N; a record unique in the sample is not necessarily unique in the population,
and these models estimate how many population members are unique on the
quasi-identifiers.  Estimates are numbers of people (`uniques`) and their share of the
population (`fraction` = uniques / N), as ARX reports them.

With no sample unique every estimate is 0 (nothing to estimate).  An estimate that is
nan, infinite or exactly 0 is "not available" — ARX's rule — and is never replaced by a
number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from apps.engine.errors import EngineInputError
from apps.engine.population.histogram import SizeHistogram
from apps.engine.population.pitman import pitman_uniques
from apps.engine.population.snb import snb_uniques
from apps.engine.population.zayatz import zayatz_uniques

ModelName = Literal["pitman", "zayatz", "snb"]
MODEL_NAMES: dict[str, str] = {"pitman": "Pitman", "zayatz": "Zayatz", "snb": "SNB"}

# Dankar et al. 2012: Pitman is the most accurate for small sampling fractions.
PITMAN_UP_TO = 0.1

# Sampling fractions of ARX's plot of population uniques (ViewRisksPopulationUniques).
CURVE_FRACTIONS: tuple[float, ...] = (
    0.0000001,
    0.000001,
    0.00001,
    0.0001,
    0.001,
    0.01,
    0.1,
    0.2,
    0.3,
    0.4,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
)


@dataclass(frozen=True)
class Estimate:
    """One model's estimate; `uniques` and `fraction` are None when not available."""

    available: bool
    uniques: float | None
    fraction: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"available": self.available, "fraction": self.fraction, "uniques": self.uniques}


@dataclass(frozen=True)
class DankarEstimate:
    """The decision rule's pick: `model` is None when there is no sample unique."""

    model: ModelName | None
    available: bool
    uniques: float | None
    fraction: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "available": self.available,
            "fraction": self.fraction,
            "uniques": self.uniques,
        }


@dataclass(frozen=True)
class PopulationUniqueness:
    size: int
    rows: int
    sampling_fraction: float
    sample_uniques: int
    pitman: Estimate
    zayatz: Estimate
    snb: Estimate
    dankar: DankarEstimate

    def to_dict(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "sampling_fraction": self.sampling_fraction,
            "sample_uniques": self.sample_uniques,
            "pitman": self.pitman.to_dict(),
            "zayatz": self.zayatz.to_dict(),
            "snb": self.snb.to_dict(),
            "dankar": self.dankar.to_dict(),
        }


def check_population(size: int | float, rows: int) -> int:
    """The population must be a whole number of people, at least the released rows."""
    if isinstance(size, bool) or not isinstance(size, int | float) or not math.isfinite(size):
        raise EngineInputError(f"population size must be a whole number, not {size!r}")
    if size != int(size):
        raise EngineInputError(f"population size must be a whole number, not {size}")
    if size < 1:
        raise EngineInputError(f"population size must be at least 1, not {int(size)}")
    if size < rows:
        raise EngineInputError(
            f"population size {int(size):,} is smaller than the {rows:,} released rows: "
            "the release cannot be a sample of it"
        )
    return int(size)


def _estimate(value: float, population: int) -> Estimate:
    if math.isnan(value) or math.isinf(value) or value == 0.0:
        return Estimate(False, None, None)
    return Estimate(True, value, value / population)


def dankar_choice(
    sampling_fraction: float, pitman: float, zayatz: float, snb: float
) -> tuple[ModelName, float]:
    """Dankar et al.'s rule on the three raw estimates (nan = not available).

    f ≤ 0.1: Pitman, or Zayatz when Pitman is not available.  f > 0.1: the smaller of
    Zayatz and SNB, or Zayatz when SNB is not available (ARX's reading of the rule).
    """
    if sampling_fraction <= PITMAN_UP_TO:
        if _valid(pitman):
            return "pitman", pitman
        return "zayatz", zayatz
    if _valid(snb):
        # a plain comparison, as ARX: a nan Zayatz never wins
        if zayatz < snb:
            return "zayatz", zayatz
        return "snb", snb
    return "zayatz", zayatz


def _valid(value: float) -> bool:
    return not math.isnan(value) and value != 0.0


def population_uniqueness(
    histogram: SizeHistogram | Sequence[tuple[int, int]], population: int | float
) -> PopulationUniqueness:
    """Every population-uniqueness figure of a release of `histogram` from `population`."""
    hist = (
        histogram if isinstance(histogram, SizeHistogram) else SizeHistogram.from_counts(histogram)
    )
    rows = hist.rows
    size = check_population(population, rows)
    fraction = rows / size
    c1 = hist.uniques
    if c1 == 0:
        zero = Estimate(True, 0.0, 0.0)
        return PopulationUniqueness(
            size, rows, fraction, 0, zero, zero, zero, DankarEstimate(None, True, 0.0, 0.0)
        )
    pitman = pitman_uniques(hist, size)
    zayatz = zayatz_uniques(hist, size)
    snb = snb_uniques(hist, size)
    model, chosen = dankar_choice(fraction, pitman, zayatz, snb)
    picked = _estimate(chosen, size)
    return PopulationUniqueness(
        size=size,
        rows=rows,
        sampling_fraction=fraction,
        sample_uniques=c1,
        pitman=_estimate(pitman, size),
        zayatz=_estimate(zayatz, size),
        snb=_estimate(snb, size),
        dankar=DankarEstimate(model, picked.available, picked.uniques, picked.fraction),
    )


@dataclass(frozen=True)
class CurvePoint:
    """Population uniques (share of the population) at one assumed sampling fraction."""

    sampling_fraction: float
    population: int
    pitman: float | None
    zayatz: float | None
    snb: float | None
    dankar: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "sampling_fraction": self.sampling_fraction,
            "population": self.population,
            "pitman": self.pitman,
            "zayatz": self.zayatz,
            "snb": self.snb,
            "dankar": self.dankar,
        }


def uniqueness_curve(
    histogram: SizeHistogram | Sequence[tuple[int, int]],
    fractions: Sequence[float] = CURVE_FRACTIONS,
) -> tuple[CurvePoint, ...]:
    """Population uniques against the sampling fraction, as ARX's plot draws them.

    For each f the population is n / f rounded half up (ARX `ARXPopulationModel.create(n, f)`).
    Shows how much the estimate hangs on the population size one assumes.
    """
    hist = (
        histogram if isinstance(histogram, SizeHistogram) else SizeHistogram.from_counts(histogram)
    )
    rows = hist.rows
    points = []
    for f in fractions:
        if not 0.0 < f <= 1.0:
            raise EngineInputError(f"sampling fraction must be in (0, 1], not {f}")
        if rows == 0:
            points.append(CurvePoint(f, 0, 0.0, 0.0, 0.0, 0.0))
            continue
        result = population_uniqueness(hist, max(math.floor(rows / f + 0.5), rows))
        points.append(
            CurvePoint(
                f,
                result.size,
                result.pitman.fraction,
                result.zayatz.fraction,
                result.snb.fraction,
                result.dankar.fraction,
            )
        )
    return tuple(points)
