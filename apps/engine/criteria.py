"""Privacy criteria a lattice node must meet, with record suppression (METHOD.md Steps 4-7).

Every criterion names a *release size* ``k``: after generalization, the rows of every
equivalence class smaller than ``k`` are record-suppressed (removed from the release);
the node passes when the suppressed rows are within the suppression limit and, for the
strict average risk, the released data's average risk meets the target.

Monotonicity along the lattice (needed for predictive tagging, El Emam et al. 2009 and
ARX's Flash), with consistent hierarchies (classes only merge when generalizing):

* k-anonymity with a suppression limit **is monotone**: a row in a class of size ``>= k``
  stays in a class of size ``>= k`` after any generalization, so the suppressed rows never
  increase. Pass => every generalization passes; fail => every specialization fails.
* The strict average risk with suppression is **not** monotone. Counter-example
  (target 0.1, cap 0.5 so k_cap = 2, limit 5 %): node N has ten classes of 10 rows and
  three singleton rows -> 3 rows suppressed (2.9 %), risk 10/100 = 0.1, passes; a
  generalization merges the three singletons into one class of 3 -> nothing suppressed,
  risk 11/103 = 0.107 > 0.1, fails (tests/engine/test_search.py). Only its suppression part (k_cap-anonymity within the
  limit) is monotone, so the search tags only failures *of that part* downwards and
  never tags a pass upwards.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from apps.engine.context import data_risk_target
from apps.engine.errors import EngineInputError
from apps.engine.risk import DEFAULT_STRICT_AVERAGE_CAP, check_strict_average_cap

#: Default cap of the strict average risk, shared with risk.py (Engine I) so that the
#: search and the measure agree: the cap is compared as a number, so with 0.33 a class of
#: 3 rows (risk 0.333) exceeds it and the search releases classes of at least 4 rows.
DEFAULT_CAP = DEFAULT_STRICT_AVERAGE_CAP
DEFAULT_SUPPRESSION_LIMIT = 0.05  # Seed 000 step 8: at most 5 % of records suppressed


def size_for_risk(risk: float) -> int:
    """Smallest class size ``k`` whose re-identification risk ``1/k`` is ``<= risk``.

    ``k = ceil(1/risk)`` (Seed 000 step 4; METHOD.md Step 4); a relative 1e-9 slack only
    absorbs floating-point noise (1/0.05 must give 20, not 21).
    """
    if not 0.0 < risk <= 1.0:
        raise EngineInputError(f"a risk threshold must be in (0, 1], got {risk}")
    return max(1, math.ceil(1.0 / risk * (1.0 - 1e-9)))


@dataclass(frozen=True)
class KAnonymity:
    """Every released class has at least ``k`` rows (Sweeney 2002)."""

    k: int
    monotone: bool = True

    @property
    def release_size(self) -> int:
        return self.k

    def describe(self) -> str:
        return f"k-anonymity, k = {self.k}"


@dataclass(frozen=True)
class MaxRisk:
    """Maximum risk ``1 / smallest class <= threshold`` (public, semi-public; Seed 000 4.2).

    Equivalent to k-anonymity with ``k = ceil(1/threshold)``.
    """

    threshold: float
    monotone: bool = True

    @property
    def release_size(self) -> int:
        return size_for_risk(self.threshold)

    def describe(self) -> str:
        return f"maximum risk <= {self.threshold:g} (k = {self.release_size})"


@dataclass(frozen=True)
class StrictAverageRisk:
    """Strict average risk ``<= threshold`` with a cap on the maximum risk (non-public).

    Definition used by the search (METHOD.md Step 4, Seed 001): rows in classes smaller
    than ``k_cap = ceil(1/cap)`` are suppressed (so the maximum risk of the release is at
    most the cap and the strict average risk equals the average risk); the node passes
    when the suppressed rows are within the limit **and** the average risk of the release,
    ``released classes / released rows``, is ``<= threshold``. Not monotone (module doc).
    """

    threshold: float
    cap: float = DEFAULT_CAP
    monotone: bool = False

    @property
    def release_size(self) -> int:
        return size_for_risk(self.cap)

    def describe(self) -> str:
        return f"strict average risk <= {self.threshold:g} (cap {self.cap:.3g})"


Criterion = KAnonymity | MaxRisk | StrictAverageRisk
ReleaseModel = Literal["public", "semi_public", "non_public"]


def criterion_for_release(
    model: str, threshold: float, context_risk: float, cap: float = DEFAULT_CAP
) -> Criterion:
    """Data-risk target for a release (METHOD.md Step 6): ``threshold / context risk``.

    Public and semi-public releases use the maximum risk, non-public ones the strict
    average risk with its cap.
    """
    target = data_risk_target(threshold, context_risk)
    check_strict_average_cap(cap)  # 0.33 or 0.5 (Seed 000 step 4.2), as risk.py measures
    if model in ("public", "semi_public"):
        return MaxRisk(target)
    if model == "non_public":
        return StrictAverageRisk(target, cap)
    raise EngineInputError(f"unknown release model {model!r} (public, semi_public, non_public)")


def allowed_suppression(rows: int, limit: float) -> int:
    """Most rows that may be suppressed: ``floor(limit x rows)`` (ARX does the same)."""
    if not 0.0 <= limit <= 1.0:
        raise EngineInputError(f"suppression limit must be in [0, 1], got {limit}")
    return math.floor(limit * rows + 1e-9)


@dataclass(frozen=True)
class Verdict:
    """Outcome of a criterion on one node's classes.

    ``monotone_failure``: the node failed in a way that every specialization fails too
    (too many suppressed rows), so the search may tag its down-set.
    """

    passes: bool
    monotone_failure: bool


def average_risk(released_classes: int, released_rows: int) -> float:
    """Average risk = classes / rows of the release (METHOD.md Step 4); 0 for no rows."""
    return released_classes / released_rows if released_rows else 0.0


def judge(
    criterion: Criterion,
    sizes: NDArray[np.int64],
    suppressed_rows: int,
    allowed: int,
) -> Verdict:
    """Apply ``criterion`` to a node whose classes of size < k are already suppressed."""
    if suppressed_rows > allowed:
        return Verdict(passes=False, monotone_failure=True)
    if isinstance(criterion, StrictAverageRisk):
        released = sizes[sizes >= criterion.release_size]
        ok = average_risk(len(released), int(released.sum())) <= criterion.threshold
        return Verdict(passes=ok, monotone_failure=False)
    return Verdict(passes=True, monotone_failure=False)
