"""Population uniqueness and attacker models (issue #17; ARX `org.deidentifier.arx.risk`).

When the release is a sample of a larger population (a survey, a research extract),
the share of people unique in the population — not only in the sample — is estimated
with Pitman's, Zayatz's and the SNB model, and Dankar et al.'s rule picks one.  The
prosecutor, journalist and marketer attacker models are reported beside them.  Every
function takes the class-size histogram of the release (suppressed rows excluded).

Modules: ``histogram`` (the input), ``special`` (digamma, trigamma, ARX-faithful
logarithm), ``solver`` (Newton–Raphson with ARX's restarts), ``pitman``, ``zayatz``,
``snb`` (one model each), ``uniqueness`` (all three, the decision rule, the curve over
sampling fractions), ``attacker`` (the three attacker models), ``regions`` (population
sizes with their sources).
"""

from apps.engine.population.attacker import (
    ARX_DEFAULT_THRESHOLD,
    AttackerModels,
    AttackerRisk,
    attacker_models,
)
from apps.engine.population.histogram import SizeHistogram
from apps.engine.population.regions import REGIONS, Region, get_region
from apps.engine.population.uniqueness import (
    CURVE_FRACTIONS,
    MODEL_NAMES,
    CurvePoint,
    DankarEstimate,
    Estimate,
    PopulationUniqueness,
    check_population,
    population_uniqueness,
    uniqueness_curve,
)

__all__ = [
    "ARX_DEFAULT_THRESHOLD",
    "CURVE_FRACTIONS",
    "MODEL_NAMES",
    "REGIONS",
    "AttackerModels",
    "AttackerRisk",
    "CurvePoint",
    "DankarEstimate",
    "Estimate",
    "PopulationUniqueness",
    "Region",
    "SizeHistogram",
    "attacker_models",
    "check_population",
    "get_region",
    "population_uniqueness",
    "uniqueness_curve",
]
