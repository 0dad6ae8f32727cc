"""Population uniqueness (Pitman, Zayatz, SNB, Dankar's rule) and the attacker models.

Reference values marked ARX were computed with ARX 3.9.2 (github.com/arx-deidentifier/arx,
commit aacd487fb, built outside this repository, default ARXSolverConfiguration) from the
same inputs: `RiskModelPopulationUniqueness.getNumUniqueTuples{Pitman,Zayatz,SNB}()` and
`isAvailableEstimate…()` on a `RiskModelHistogram` (hand-made histograms) or on
`/work/shared/data/arx/adult.csv` with the listed quasi-identifiers, and
`RiskModelSampleSummary` for the attacker models.  ARX's own published expectations
(TestRiskMetrics.testDecisionRule2) are marked as such.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.engine.errors import EngineInputError
from apps.engine.frame import encode
from apps.engine.population import (
    REGIONS,
    SizeHistogram,
    attacker_models,
    get_region,
    population_uniqueness,
    uniqueness_curve,
)
from apps.engine.population.pitman import pitman_start, pitman_uniques
from apps.engine.population.snb import SnbEquations, shlosser_classes, snb_uniques
from apps.engine.population.uniqueness import dankar_choice
from apps.engine.population.zayatz import hypergeometric_one, zayatz_uniques
from apps.engine.reading import read_table
from apps.engine.risk import encoded_class_sizes
from tests.engine.benchmark_data import require
from tests.engine.conftest import ADULT, ADULT_COLUMNS

REL = 1e-6  # the issue's tolerance; we agree with ARX to about 1e-9 or better

USA_ARX = 317_238_626


@cache
def adult_histogram(columns: tuple[str, ...]) -> SizeHistogram:
    require(ADULT)
    frame = read_table(str(ADULT), sep=";")
    return SizeHistogram.from_class_sizes(encoded_class_sizes(encode(frame, list(columns))))


def hist(text: str) -> SizeHistogram:
    """ "1:10,2:5" → 10 classes of size 1 and 5 of size 2."""
    return SizeHistogram.from_counts(
        tuple(int(v) for v in part.split(":"))
        for part in text.split(",")  # type: ignore[misc]
    )


# --------------------------------------------------------------------------- the issue's reference


def test_adult_usa_reference_of_the_issue() -> None:
    """Adult, all 9 columns, USA (ARX's preset): the numbers the issue asks for."""
    result = population_uniqueness(adult_histogram(ADULT_COLUMNS), USA_ARX)
    assert result.rows == 30_162 and result.sample_uniques == 15_512
    assert result.sampling_fraction == 30_162 / USA_ARX
    assert result.pitman.available and result.zayatz.available
    assert result.pitman.fraction == pytest.approx(0.038896188531360315, rel=REL)
    assert result.zayatz.fraction == pytest.approx(0.2645647181504129, rel=REL)
    # "fraction of the population" is estimated uniques / N (ARX getFractionOfUniqueTuples…)
    assert result.pitman.uniques == pytest.approx(0.038896188531360315 * USA_ARX, rel=REL)
    assert not result.snb.available and result.snb.fraction is None and result.snb.uniques is None
    assert result.dankar.model == "pitman"
    assert result.dankar.fraction == result.pitman.fraction


@pytest.mark.parametrize(
    ("f", "expected"),
    [
        (0.1, 0.27684993883653597),
        (0.2, 0.3577099234829125),
        (0.01, 0.1446083531167384),
        (1.0, 0.5142895033485844),
    ],
)
def test_adult_published_arx_expectations(f: float, expected: float) -> None:
    """ARX's TestRiskMetrics.testDecisionRule2: Dankar's estimate on adult at f = n/N."""
    histogram = adult_histogram(ADULT_COLUMNS)
    population = math.floor(histogram.rows / f + 0.5)  # ARXPopulationModel.create(n, f)
    result = population_uniqueness(histogram, population)
    assert result.dankar.fraction == pytest.approx(expected, rel=REL)
    sample_uniqueness = histogram.uniques / histogram.rows
    assert result.dankar.fraction <= sample_uniqueness + 1e-12  # ARX asserts this too


# (quasi-identifiers, N, Pitman, Zayatz, SNB uniques (None = not available), Dankar's model), ARX
ADULT_REFERENCES = [
    (ADULT_COLUMNS, 301620, 83503.47855187597, 96741.67099172718, None, "pitman"),
    (ADULT_COLUMNS, 60324, 26295.40039041532, 26056.918512805987, None, "zayatz"),
    (ADULT_COLUMNS, 33513, 17242.651883685314, 16756.004848635806, 16653.11354496266, "snb"),
    (ADULT_COLUMNS, 317238626, 12339373.406325705, 83930147.67411424, None, "pitman"),
    (ADULT_COLUMNS, 5685807, 687587.2579552586, 1525985.9697118707, None, "pitman"),
    (("sex", "age", "race"), 301620, 92.65921249384856, 38.41939802479843, None, "pitman"),
    (("sex", "age", "race"), 60324, 92.01074642477023, 42.97254593733669, None, "zayatz"),
    (("sex", "age", "race"), 33513, 91.77504764156535, 56.94677053232786, 47.57972457348016, "snb"),
    (("sex", "age", "race"), 317238626, 95.5157941360764, 1377.2174401220948, None, "pitman"),
    (("sex", "age", "race"), 5685807, 93.85419518326572, 73.23123261056811, None, "pitman"),
    (("sex", "age"), 301620, 0.05917303580978007, 1.5691034532230324, None, "pitman"),
    (("sex", "age"), 60324, 0.2973589223929083, 3.258820719192101, None, "zayatz"),
    (("sex", "age"), 33513, 0.5362367515145696, 3.9779134940525567, None, "zayatz"),
    (("sex", "age"), 317238626, 5.50480753004005e-05, 5.781113548920387, None, "pitman"),
    (("sex", "age"), 5685807, 0.003110292853144671, 0.502301000314136, None, "pitman"),
    (
        ("age", "education", "occupation"),
        301620,
        3069.2625183390182,
        3661.36568204775,
        None,
        "pitman",
    ),
    (
        ("age", "education", "occupation"),
        60324,
        2276.7387254330306,
        2146.587193329265,
        None,
        "zayatz",
    ),
    (
        ("age", "education", "occupation"),
        33513,
        2041.4405382288473,
        1933.3895723151081,
        1844.3287823239955,
        "snb",
    ),
    (
        ("age", "education", "occupation"),
        317238626,
        11165.262468101158,
        1270556.1473885414,
        None,
        "pitman",
    ),
    (
        ("age", "education", "occupation"),
        5685807,
        5293.233710572643,
        25176.68529761189,
        None,
        "pitman",
    ),
    (
        ("age", "marital-status", "education", "native-country", "workclass", "occupation"),
        301620,
        46924.828471980385,
        53507.52157549241,
        None,
        "pitman",
    ),
    (
        ("age", "marital-status", "education", "native-country", "workclass", "occupation"),
        60324,
        16923.9191895305,
        16734.543540296978,
        None,
        "zayatz",
    ),
    (
        ("age", "marital-status", "education", "native-country", "workclass", "occupation"),
        33513,
        11661.247132675022,
        11374.99002750855,
        11244.079403542299,
        "snb",
    ),
    (
        ("age", "marital-status", "education", "native-country", "workclass", "occupation"),
        317238626,
        3856945.433855506,
        39463650.95105742,
        None,
        "pitman",
    ),
    (
        ("age", "marital-status", "education", "native-country", "workclass", "occupation"),
        5685807,
        301658.60677080165,
        729542.8041655303,
        None,
        "pitman",
    ),
    (
        (
            "sex",
            "race",
            "marital-status",
            "education",
            "native-country",
            "workclass",
            "occupation",
            "salary-class",
        ),
        301620,
        18804.017341846036,
        18858.85397004312,
        None,
        "pitman",
    ),
    (
        (
            "sex",
            "race",
            "marital-status",
            "education",
            "native-country",
            "workclass",
            "occupation",
            "salary-class",
        ),
        60324,
        6878.793937834508,
        6749.3083252466095,
        None,
        "zayatz",
    ),
    (
        (
            "sex",
            "race",
            "marital-status",
            "education",
            "native-country",
            "workclass",
            "occupation",
            "salary-class",
        ),
        33513,
        4764.390468519199,
        4707.577468082633,
        4631.709422440663,
        "snb",
    ),
    (
        (
            "sex",
            "race",
            "marital-status",
            "education",
            "native-country",
            "workclass",
            "occupation",
            "salary-class",
        ),
        317238626,
        1453598.8678839307,
        6849134.927277622,
        None,
        "pitman",
    ),
    (
        (
            "sex",
            "race",
            "marital-status",
            "education",
            "native-country",
            "workclass",
            "occupation",
            "salary-class",
        ),
        5685807,
        117792.59599773205,
        157024.10830591794,
        None,
        "pitman",
    ),
    (("age",), 301620, 0.07776364850702626, 0.25679612143250247, None, "pitman"),
    (("age",), 60324, 0.2640832555869784, 0.6687449278407696, None, "zayatz"),
    (("age",), 33513, 0.4127231827670805, 1.0477296358185448, None, "zayatz"),
    (("age",), 317238626, 0.00039373733845888935, 0.3712270355305279, None, "pitman"),
    (("age",), 5685807, 0.008355758604088456, 0.09291289581503133, None, "pitman"),
]


@pytest.mark.parametrize(
    ("columns", "population", "pitman", "zayatz", "snb", "model"), ADULT_REFERENCES
)
def test_adult_against_arx(
    columns: tuple[str, ...],
    population: int,
    pitman: float | None,
    zayatz: float | None,
    snb: float | None,
    model: str,
) -> None:
    result = population_uniqueness(adult_histogram(tuple(columns)), population)
    for estimate, expected in ((result.pitman, pitman), (result.zayatz, zayatz), (result.snb, snb)):
        assert estimate.available is (expected is not None)
        if expected is not None:
            assert estimate.uniques == pytest.approx(expected, rel=REL)
            assert estimate.fraction == pytest.approx(expected / population, rel=REL)
    assert result.dankar.model == model


# --------------------------------------------------------------------------- hand-made histograms

# (histogram, N, Pitman, Zayatz, SNB, Dankar's model), ARX
HAND_MADE = [
    ("1:2,2:1", 8, None, 2.5454545454545454, None, "zayatz"),
    ("1:10,2:5,3:2", 1000, None, 151.10771768282544, None, "zayatz"),
    ("1:10,2:5,3:2", 100, None, 18.47735333910266, None, "zayatz"),
    ("1:50,2:20,3:10,5:4", 10000, 1.5718015566126082, 1298.452734586496, None, "pitman"),
    ("1:50,2:20,3:10,5:4", 100000, 0.06476511009560108, 12777.911980350847, None, "pitman"),
    ("1:50,2:20,3:10,5:4", 1000, 38.14646697462529, 151.79917624801473, None, "zayatz"),
    ("1:50,2:20,3:10,5:4", 400, 135.71372123671478, 77.33409129338027, None, "zayatz"),
    ("1:50,2:20,3:10,5:4", 147, None, 50.502752551245166, 50.20039135173435, "snb"),
    (
        "1:120,2:40,3:25,4:12,6:8,10:3",
        1000000,
        85.22502969005772,
        89630.65446033225,
        None,
        "pitman",
    ),
    ("1:120,2:40,3:25,4:12,6:8,10:3", 2000, 157.54868431046782, 259.9980999359307, None, "zayatz"),
    (
        "1:120,2:40,3:25,4:12,6:8,10:3",
        445,
        182.78660738855032,
        124.17128187165603,
        121.45949228368492,
        "snb",
    ),
    (
        "1:300,2:60,3:20,4:10,8:5",
        589,
        393.9994813582088,
        309.2841974420658,
        308.56428357461925,
        "snb",
    ),
    (
        "1:500,2:100,3:30,5:10,12:2",
        909,
        723.1447817922095,
        515.5971757194295,
        514.612440907448,
        "snb",
    ),
    (
        "1:3859,2:296,8:498,19:711,22:5,40:3,48:3",
        27897,
        4084.108609395453,
        4680.016996881513,
        4514.256856365685,
        "snb",
    ),
    ("1:851,2:275,28:377", 11957, 773.2844206163315, 851.0, 851.000000987023, "zayatz"),
    ("1:1", 1000, 3.609762761300796, 1000.0, None, "pitman"),
]


@pytest.mark.parametrize(("text", "population", "pitman", "zayatz", "snb", "model"), HAND_MADE)
def test_hand_made_histograms_against_arx(
    text: str,
    population: int,
    pitman: float | None,
    zayatz: float | None,
    snb: float | None,
    model: str,
) -> None:
    result = population_uniqueness(hist(text), population)
    for estimate, expected in ((result.pitman, pitman), (result.zayatz, zayatz), (result.snb, snb)):
        assert estimate.available is (expected is not None), text
        if expected is not None:
            assert estimate.uniques == pytest.approx(expected, rel=REL)
    assert result.dankar.model == model


def test_zayatz_by_hand() -> None:
    """2 uniques and a pair (n = 4) from N = 8, f = 1/2.
    P₁(1) = n/N = 1/2; P₂(1) = 2·(4/8)·(4/7) = 4/7 (one of the pair drawn, the other not);
    P(unique | sample unique) = (2/3·1/2) / (2/3·1/2 + 1/3·4/7) = 7/11;
    population uniques = c1 · 7/11 / f = 28/11."""
    assert zayatz_uniques(hist("1:2,2:1"), 8) == pytest.approx(28 / 11, rel=1e-14)


@given(
    st.integers(min_value=1, max_value=60).flatmap(
        lambda n_pop: st.tuples(
            st.just(n_pop),
            st.integers(min_value=1, max_value=n_pop),
            st.integers(min_value=1, max_value=n_pop),
        )
    )
)
def test_hypergeometric_against_binomial_coefficients(case: tuple[int, int, int]) -> None:
    population, sample, marked = case
    exact = marked * math.comb(population - marked, sample - 1) / math.comb(population, sample)
    got = hypergeometric_one(float(population), float(sample), np.array([marked]))[0]
    assert got == pytest.approx(exact, rel=1e-12, abs=1e-300)


def test_shlosser_classes_by_hand() -> None:
    """ARX's form on 2 uniques and a pair, f = 1/2: numerator Σ k f²(1−f²)^(k−1) c_k = 0.875,
    denominator Σ [c_k (1−f)^k (1+f)^k − 1] = 0.5 − 0.4375 = 0.0625, Σ c_k (1−f)^k = 1.25,
    Σ k f (1−f)^(k−1) c_k = 1.5; K = 3 + 2 · 14 · (1.25/1.5)²."""
    assert shlosser_classes(hist("1:2,2:1"), 0.5) == pytest.approx(3 + 28 * (1.25 / 1.5) ** 2)


@given(
    st.floats(min_value=0.2, max_value=3.0),
    st.floats(min_value=0.05, max_value=0.95),
    st.floats(min_value=0.05, max_value=0.95),
)
def test_snb_jacobian(alpha: float, beta: float, f: float) -> None:
    """Row 1 is the derivative of F1; row 2 that of the model's second equation, which
    divides by g^(α+2) where ARX's F2 multiplies (see snb.py)."""
    equations = SnbEquations(200.0, f, 0.0, 0.0)
    (_, _), ((f1a, f1b), (f2a, f2b)) = equations(alpha, beta)
    h = 1e-6

    def f1(a: float, b: float) -> float:
        return equations(a, b)[0][0]

    def model_f2(a: float, b: float) -> float:
        d = (1 - f) * (1 - b)
        return 200.0 * a * b**a * f * f * (1 - b) * (2 - (1 - a) * d) / (2 * (1 - d) ** (a + 2))

    for got, function, da, db in (
        (f1a, f1, h, 0.0),
        (f1b, f1, 0.0, h),
        (f2a, model_f2, h, 0.0),
        (f2b, model_f2, 0.0, h),
    ):
        slope = (function(alpha + da, beta + db) - function(alpha - da, beta - db)) / (2 * h)
        assert got == pytest.approx(slope, rel=1e-5, abs=1e-6)


def test_pitman_start_by_hand() -> None:
    """c1 = 10, c2 = 5, u = 17, n = 26: c = c1(c1−1)/c2 = 18,
    θ₀ = (n·u·c − c1(n−1)(2u + c)) / (2c1·u + c1·c − n·c) = (7956 − 13000) / (340 + 180 − 468),
    α₀ = (θ₀(c1 − n) + (n − 1)c1) / (n·u)."""
    theta, alpha = pitman_start(hist("1:10,2:5,3:2"))
    assert theta == pytest.approx(-5044 / 52)
    assert alpha == pytest.approx((theta * (10 - 26) + 25 * 10) / (26 * 17))


def test_pitman_not_available_is_never_a_number() -> None:
    assert math.isnan(pitman_uniques(hist("1:10,2:5,3:2"), 1000))  # ARX: not available
    assert math.isnan(snb_uniques(hist("1:10,2:5,3:2"), 1000))


# --------------------------------------------------------------------------- decision rule


def test_dankar_rule() -> None:
    nan = math.nan
    assert dankar_choice(0.1, 5.0, 9.0, 1.0) == ("pitman", 5.0)  # f ≤ 0.1: Pitman
    assert dankar_choice(0.05, nan, 9.0, 1.0) == ("zayatz", 9.0)  # … unless not available
    assert dankar_choice(0.2, 5.0, 9.0, 7.0) == ("snb", 7.0)  # f > 0.1: the smaller
    assert dankar_choice(0.2, 5.0, 6.0, 7.0) == ("zayatz", 6.0)
    assert dankar_choice(0.2, 5.0, 6.0, nan) == ("zayatz", 6.0)  # SNB not available
    assert dankar_choice(0.2, 5.0, nan, 7.0) == ("snb", 7.0)


def test_no_sample_unique_means_nothing_to_estimate() -> None:
    result = population_uniqueness(hist("2:30,3:10"), 50_000)  # ARX: 0 everywhere
    assert result.sample_uniques == 0
    for estimate in (result.pitman, result.zayatz, result.snb):
        assert (estimate.available, estimate.uniques, estimate.fraction) == (True, 0.0, 0.0)
    assert result.dankar.model is None and result.dankar.fraction == 0.0


def test_empty_release() -> None:
    result = population_uniqueness(SizeHistogram.from_class_sizes([]), 1000)
    assert result.rows == 0 and result.sampling_fraction == 0.0 and result.dankar.uniques == 0.0
    assert attacker_models(SizeHistogram.from_class_sizes([])).prosecutor.highest == 0.0


@pytest.mark.parametrize(
    ("population", "message"),
    [
        (10, "smaller than the 26 released rows"),
        (0, "at least 1"),
        (100.5, "whole number"),
        (math.inf, "whole number"),
    ],
)
def test_bad_population(population: float, message: str) -> None:
    with pytest.raises(EngineInputError, match=message):
        population_uniqueness(hist("1:10,2:5,3:2"), population)


def test_histogram_input_checks() -> None:
    with pytest.raises(EngineInputError, match="sizes must be at least 1"):
        SizeHistogram.from_counts([(0, 3)])
    merged = SizeHistogram.from_counts([(2, 1), (1, 3), (2, 4), (5, 0)])
    assert merged.sizes.tolist() == [1, 2] and merged.counts.tolist() == [3, 5]
    assert (merged.rows, merged.classes, merged.uniques) == (13, 8, 3)


# --------------------------------------------------------------------------- curve


def test_curve_matches_arx_plot_points() -> None:
    """ARX's plot: N = n/f rounded half up (f = 0.8 gives 37,703), ARX values at three points."""
    points = {p.sampling_fraction: p for p in uniqueness_curve(adult_histogram(ADULT_COLUMNS))}
    assert len(points) == 15 and min(points) == 1e-7 and max(points) == 0.9
    assert points[0.8].population == 37_703
    assert points[0.8].zayatz == pytest.approx(18278.364688484242 / 37_703, rel=REL)
    assert points[0.8].dankar == points[0.8].zayatz and points[0.8].snb is None
    assert points[0.001].pitman == pytest.approx(2278255.692101257 / 30_162_000, rel=REL)
    assert points[0.9].snb == pytest.approx(16653.11354496266 / 33_513, rel=REL)
    assert points[0.9].dankar == points[0.9].snb


def test_curve_rejects_bad_fractions() -> None:
    with pytest.raises(EngineInputError, match="sampling fraction"):
        uniqueness_curve(hist("1:1"), [0.0])


# --------------------------------------------------------------------------- attacker models


def test_attacker_models_by_hand() -> None:
    """Classes 1, 2, 3, 4 (10 rows): highest 1; rows with 1/f > 0.3 are the 1 + 2 + 3 of the
    classes of size 1, 2, 3 → 6/10; success rate = 4 classes / 10 rows."""
    models = attacker_models(hist("1:1,2:1,3:1,4:1"), 0.3)
    assert models.prosecutor.highest == 1.0
    assert models.prosecutor.records_at_risk == pytest.approx(0.6)
    assert models.prosecutor.success_rate == pytest.approx(0.4)
    assert models.journalist == models.prosecutor  # no population table (ARX)
    assert models.marketer_success_rate == pytest.approx(0.4)
    assert attacker_models(hist("2:3,5:2"), 0.5).prosecutor.records_at_risk == 0.0  # 1/2 ≯ 0.5


@pytest.mark.parametrize(
    ("columns", "threshold", "at_risk", "success"),
    [
        (ADULT_COLUMNS, 0.1, 0.893806776738943, 0.6465751607983555),
        (ADULT_COLUMNS, 0.2, 0.7781314236456468, 0.6465751607983555),
        (("sex", "age", "race"), 0.2, 0.014090577547907964, 0.0175054704595186),
    ],
)
def test_attacker_models_against_arx(
    columns: tuple[str, ...], threshold: float, at_risk: float, success: float
) -> None:
    models = attacker_models(adult_histogram(columns), threshold)
    for risk in (models.prosecutor, models.journalist):
        assert risk.highest == 1.0
        assert risk.records_at_risk == pytest.approx(at_risk, rel=1e-12)
        assert risk.success_rate == pytest.approx(success, rel=1e-12)
    assert models.marketer_success_rate == pytest.approx(success, rel=1e-12)


def test_attacker_threshold_checked() -> None:
    with pytest.raises(EngineInputError, match="threshold"):
        attacker_models(hist("1:1"), 0.0)


# --------------------------------------------------------------------------- regions


def test_regions() -> None:
    assert get_region("USA").size == USA_ARX  # ARX's preset, as the issue states
    assert get_region("usa-2020").size == 331_449_281
    assert (
        get_region("ontario").year == 2021 and "Statistics Canada" in get_region("Ontario").source
    )
    assert get_region("United Kingdom").key == "uk-2021"
    keys = [r.key for r in REGIONS]
    assert len(keys) == len(set(keys))
    for region in REGIONS:
        assert region.size > 0 and region.source
        assert (region.year is None) == (region.group == "arx")
    provinces = [
        r for r in REGIONS if r.source == get_region("ontario").source and r.key != "canada-2021"
    ]
    assert len(provinces) == 13  # 10 provinces and 3 territories add up to Canada
    assert sum(r.size for r in provinces) == get_region("canada-2021").size
    with pytest.raises(EngineInputError, match="unknown population region 'atlantis'"):
        get_region("atlantis")
