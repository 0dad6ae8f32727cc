"""Prosecutor, journalist and marketer risk (El Emam 2013, ch. 2; ARX `RiskModelSampleSummary`).

Three attacker models, from the class sizes of the release alone (no population table):
- prosecutor: knows the target is in the release.  Highest risk = 1 / smallest class;
  records at risk = share of rows whose 1/f exceeds the threshold; success rate
  (the share of rows re-identified on average) = classes / rows.
- journalist: does not know whether the target is in the release, so risks are computed
  on the population classes that the release's classes come from.  Without a population
  table ARX takes the release's own classes for them, so every figure equals the
  prosecutor's (success rate = max(classes / Σ population sizes, mean of sample/population
  sizes), both classes / rows here).
- marketer: re-identifies as many records as possible, not one target: success rate =
  mean over rows of 1/(population class size) = classes / rows here.

The IPC's method (seed 000 step 4) uses the prosecutor's figures; these are shown beside
them, as ARX shows them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apps.engine.errors import EngineInputError
from apps.engine.population.histogram import SizeHistogram

# ARX's default threshold for "records at risk" (ModelRisk.getRiskThresholdHighestRisk).
ARX_DEFAULT_THRESHOLD = 0.2


@dataclass(frozen=True)
class AttackerRisk:
    highest: float  # largest probability of re-identification of a row
    records_at_risk: float  # share of rows (0..1) whose probability exceeds the threshold
    success_rate: float  # share of rows re-identified on average

    def to_dict(self) -> dict[str, Any]:
        return {
            "highest": self.highest,
            "records_at_risk": self.records_at_risk,
            "success_rate": self.success_rate,
        }


@dataclass(frozen=True)
class AttackerModels:
    threshold: float
    prosecutor: AttackerRisk
    journalist: AttackerRisk
    marketer_success_rate: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "prosecutor": self.prosecutor.to_dict(),
            "journalist": self.journalist.to_dict(),
            "marketer": {"success_rate": self.marketer_success_rate},
        }


def prosecutor_risk(histogram: SizeHistogram, threshold: float) -> AttackerRisk:
    """Prosecutor model: 1/min f, share of rows with 1/f > threshold, classes / rows."""
    rows = histogram.rows
    if rows == 0:
        return AttackerRisk(0.0, 0.0, 0.0)
    sizes, counts = histogram.sizes, histogram.counts
    risky_rows = int((sizes * counts)[1.0 / sizes > threshold].sum())
    return AttackerRisk(
        highest=1.0 / int(sizes[0]),
        records_at_risk=risky_rows / rows,
        success_rate=histogram.classes / rows,
    )


def journalist_risk(histogram: SizeHistogram, threshold: float) -> AttackerRisk:
    """Journalist model without a population table: the population classes are the
    release's own (ARX), so the figures are the prosecutor's."""
    return prosecutor_risk(histogram, threshold)


def marketer_success_rate(histogram: SizeHistogram) -> float:
    """Marketer model: mean over rows of 1/(class size) = classes / rows (0 when empty)."""
    rows = histogram.rows
    return histogram.classes / rows if rows else 0.0


def attacker_models(
    histogram: SizeHistogram, threshold: float = ARX_DEFAULT_THRESHOLD
) -> AttackerModels:
    """The three attacker models of a release, records at risk measured against `threshold`."""
    if not 0.0 < threshold <= 1.0:
        raise EngineInputError(f"attacker-model threshold must be in (0, 1], not {threshold}")
    return AttackerModels(
        threshold=threshold,
        prosecutor=prosecutor_risk(histogram, threshold),
        journalist=journalist_risk(histogram, threshold),
        marketer_success_rate=marketer_success_rate(histogram),
    )
