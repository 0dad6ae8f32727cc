"""Attack tests counted in persons (issues 25 and 28): every figure worked out by hand.

Six persons and their visits (diagnosis codes; person-level sex and birth year; a
person-level outcome and an event-level drug as sensitive values):

    P1 F 1970  A B A      outcome yes  drugs d1 d2 d1
    P2 F 1970  A C        outcome no   drugs d1 d3
    P3 M 1980  A A        outcome yes  drugs d1 d1
    P4 M 1980  A B        outcome yes  drugs d2 d2
    P5 M 1980  B C D      outcome no   drugs d3 d3 d4
    P6 F 1990  C D D C    outcome no   drugs d4 d4 d4 d4

Classes (sex, birth year): {P1, P2}, {P3, P4, P5}, {P6}; feature sets F1 = {A, B},
F2 = {A, C}, F3 = {A}, F4 = {A, B}, F5 = {B, C, D}, F6 = {C, D}.  The adversary knows a
target's class and s = min(p, |F_i|) of their codes; a target's score is the mean over
every such set S of: singling out = 1 when exactly one released person of the class
holds S; linkability = 1/m when the target is among the m persons holding S.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from apps.engine.attacks import (
    EXACT,
    INFERENCE,
    LINKABILITY,
    NEAREST,
    SINGLING_OUT,
    QuasiIdentifier,
    attack_persons,
    attack_release,
    person_scores,
)
from apps.engine.attacks.person_index import PERSON_ID
from apps.engine.longitudinal import from_long_table, measure, prepare

PERSONS = {
    "P1": ("F", "1970", "yes", [("A", "d1"), ("B", "d2"), ("A", "d1")]),
    "P2": ("F", "1970", "no", [("A", "d1"), ("C", "d3")]),
    "P3": ("M", "1980", "yes", [("A", "d1"), ("A", "d1")]),
    "P4": ("M", "1980", "yes", [("A", "d2"), ("B", "d2")]),
    "P5": ("M", "1980", "no", [("B", "d3"), ("C", "d3"), ("D", "d4")]),
    "P6": ("F", "1990", "no", [("C", "d4"), ("D", "d4"), ("D", "d4"), ("C", "d4")]),
}


def visits(persons=PERSONS, drop=()):  # type: ignore[no-untyped-def]
    """The long table: one row per visit (``drop``: (person, code) visits left out)."""
    rows = [
        {"pid": pid, "sex": sex, "birth": birth, "outcome": outcome, "dx": dx, "drug": drug}
        for pid, (sex, birth, outcome, events) in persons.items()
        for dx, drug in events
        if (pid, dx) not in drop
    ]
    return pl.DataFrame(rows)


def data(frame: pl.DataFrame, event_quasi=("dx",)):  # type: ignore[no-untyped-def]
    return from_long_table(
        frame, person="pid", person_quasi=["sex", "birth"], event_quasi=list(event_quasi)
    )


def rows(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select(pl.col("pid").alias(PERSON_ID), "outcome", "drug")


def test_counted_in_persons_not_rows() -> None:
    # LONGITUDINAL.md TC1: P1 (F, 1970) x3 rows, P2 (M, 1980) x1, P3 (M, 1980) x2.
    frame = pl.DataFrame(
        {
            "pid": ["P1", "P1", "P1", "P2", "P3", "P3"],
            "sex": ["F", "F", "F", "M", "M", "M"],
            "birth": ["1970", "1970", "1970", "1980", "1980", "1980"],
        }
    )
    d = from_long_table(frame, person="pid", person_quasi=["sex", "birth"], event_quasi=[])
    scores = person_scores(d, d, [0, 1, 2], power=1)
    # In persons: P1 is alone in (F, 1970), P2 and P3 share (M, 1980): 1, 1/2, 1/2, and
    # the mean 2/3 is TC1's average risk over persons.
    assert scores.exact.tolist() == pytest.approx([1.0, 0.5, 0.5])
    assert scores.singling_out.tolist() == [1.0, 0.0, 0.0]
    assert scores.exact.mean() == pytest.approx(2 / 3)
    # The record-level attacks count rows: both classes hold 3 rows, so whichever rows are
    # drawn each is linked 1 time in 3 (TC1's forbidden answer) and 3 rows are attacked.
    rowwise = attack_release(
        frame,
        frame.sample(fraction=1.0, shuffle=True, seed=3),
        quasi=[QuasiIdentifier("sex"), QuasiIdentifier("birth")],
        seed=5,
    ).result(LINKABILITY, EXACT)
    assert rowwise.attack.rate == pytest.approx(1 / 3)
    assert rowwise.attacks == 3
    # In persons the three persons give one attack (at most half of them), never 3.
    report = attack_persons(d, d, power=1, seed=5)
    assert report.unit == "person" and report.targets == 1
    assert report.result(LINKABILITY, EXACT).attack.rate in (1.0, 0.5)


# Per target P1…P6, hand-computed (module docstring).
P1_SINGLE = [1 / 2, 1 / 2, 0, 0, 2 / 3, 1]  # P1: {A}→P1,P2 (0), {B}→P1 (1); P5: {B},{C},{D}
P1_LINK = [3 / 4, 3 / 4, 1 / 2, 1 / 2, 5 / 6, 1]  # P1: (1/2 + 1)/2; P5: (1/2 + 1 + 1)/3
# p = 2: every pair isolates its person, except P3 whose one code A is held by P3, P4.
P2_SINGLE = [1, 1, 0, 1, 1, 1]
P2_LINK = [1, 1, 1 / 2, 1, 1, 1]
# Control (own person taken out), p = 1: P1 {A}→P2 alone (1), {B}→nobody; P3 {A}→P4;
# P4 {A}→P3, {B}→P5; P5 {B}→P4 (1), {C},{D}→nobody; P6 has no one left.
P1_CONTROL_SINGLE = [1 / 2, 1 / 2, 1, 1, 1 / 3, 0]


def test_singling_out_and_linkability_by_hand_for_p_1_and_2() -> None:
    d = data(visits())
    for power, single, link in ((1, P1_SINGLE, P1_LINK), (2, P2_SINGLE, P2_LINK)):
        scores = person_scores(d, d, range(6), power=power)
        assert scores.singling_out.tolist() == pytest.approx(single), power
        assert scores.exact.tolist() == pytest.approx(link), power
        # nothing suppressed: the nearest match is the exact one
        assert scores.nearest.tolist() == pytest.approx(link), power
    every = person_scores(d, d, range(6), power="all")
    assert every.exact.tolist() == pytest.approx(P2_LINK)  # F_i whole: as p = 2 here
    control = person_scores(d, d, range(6), power=1, leave_out=[True] * 6)
    assert control.singling_out.tolist() == pytest.approx(P1_CONTROL_SINGLE)
    assert control.exact.tolist() == [0.0] * 6 and control.nearest.tolist() == [0.0] * 6


def test_a_suppressed_event_is_reached_by_the_nearest_match_only() -> None:
    # The release lost P5's visit D. P5 at p = 1: {B}→P4, P5 (1/2); {C}→P5 (1);
    # {D}→no one exactly, nearest = the 3 persons of (M, 1980), none holding D (1/3).
    released = data(visits(drop={("P5", "D")}))
    scores = person_scores(data(visits()), released, [4], power=1)
    assert scores.singling_out.tolist() == pytest.approx([1 / 3])
    assert scores.exact.tolist() == pytest.approx([(1 / 2 + 1 + 0) / 3])
    assert scores.nearest.tolist() == pytest.approx([(1 / 2 + 1 + 1 / 3) / 3])


def test_inference_of_a_person_level_and_an_event_level_value() -> None:
    frame = visits()
    d = data(frame)
    scores = person_scores(
        d,
        d,
        range(6),
        power=1,
        sensitive=["outcome", "drug"],
        seen_rows=rows(frame),
        released_rows=rows(frame),
    )
    # outcome, most frequent among the candidates (ties split): P1 {A}→yes/no (1/2),
    # {B}→yes (1); P2 likewise; P3 {A}→yes, yes; P4 {A}→yes, yes (1), {B}→yes/no (1/2);
    # P5 {B}→yes/no (1/2), {C},{D}→no; P6 no.
    assert scores.inferred["outcome"].tolist() == pytest.approx([3 / 4, 3 / 4, 1, 3 / 4, 5 / 6, 1])
    # drug, counted in persons holding it: P3 {A}→P3 {d1}, P4 {d2}: a tie, P3 holds d1
    # (1/2); P4 {A} the same (1/2), {B}→P4 {d2}, P5 {d3, d4}: three modes, P4 holds one
    # (1/3).
    assert scores.inferred["drug"][2] == pytest.approx(1 / 2)
    assert scores.inferred["drug"][3] == pytest.approx((1 / 2 + 1 / 3) / 2)


def test_attack_control_and_baseline_rates_follow_the_hand_scores() -> None:
    d = data(visits())
    report = attack_persons(d, d, power=1, seed=11)
    ids = ["P1", "P2", "P3", "P4", "P5", "P6"]
    attacked = [ids.index(p) for p in report.attack_persons]
    control = [ids.index(p) for p in report.control_persons]
    assert report.targets == 3 and len(control) == 3 and not set(attacked) & set(control)
    single = report.result(SINGLING_OUT, EXACT)
    link = report.result(LINKABILITY, EXACT)
    near = report.result(LINKABILITY, NEAREST)
    assert single.attack.rate == pytest.approx(np.mean([P1_SINGLE[i] for i in attacked]))
    assert single.control.rate == pytest.approx(np.mean([P1_CONTROL_SINGLE[i] for i in control]))
    assert link.attack.rate == pytest.approx(np.mean([P1_LINK[i] for i in attacked]))
    assert near.attack.rate == link.attack.rate
    assert link.control.rate == 0.0
    # a released person picked at random: 1 in 6
    assert link.baseline.rate == pytest.approx(1 / 6)
    assert link.attacks == 3 and link.attack.trials == 3
    assert link.attack.low < link.attack.rate < link.attack.high
    assert report.power == "1" and report.released_persons == 6
    assert attack_persons(d, d, power=1, seed=11).to_dict() == report.to_dict()
    with pytest.raises(KeyError):
        report.result(INFERENCE, "outcome")


def test_all_persons_unique_are_all_linked() -> None:
    # 40 persons, each alone on (sex, birth): linked every time, whatever they know.
    rng = np.random.default_rng(4)
    frame = pl.DataFrame(
        [
            {"pid": f"P{i}", "sex": "FM"[i % 2], "birth": str(1940 + i // 2), "dx": dx}
            for i in range(40)
            for dx in rng.choice(list("ABCDE"), size=int(rng.integers(1, 5)))
        ]
    )
    d = data(frame)
    report = attack_persons(d, d, power=2, seed=1)
    for variant in (EXACT, NEAREST):
        result = report.result(LINKABILITY, variant)
        assert (result.attack.rate, result.control.rate) == (1.0, 0.0)
        assert result.baseline.rate == pytest.approx(1 / 40)
    assert report.result(SINGLING_OUT, EXACT).attack.rate == 1.0


@pytest.mark.parametrize("power", [1, 2, 3])
def test_k_anonymous_in_persons_links_at_most_one_in_k(power: int) -> None:
    # Random visits; birth years generalized to decades. Each person's strict count k_i
    # (Step 4's measure on the release) bounds every known set's matches from below, so
    # no target is linked more than 1/k_i, nor singled out when k_i >= 2.
    rng = np.random.default_rng(power)
    records = []
    for i in range(120):
        births = str(1940 + 10 * int(rng.integers(0, 3)))
        for dx in rng.choice(list("ABCD"), size=int(rng.integers(1, 5))):
            records.append({"pid": f"{i:03d}", "sex": "FM"[i % 2], "birth": births, "dx": dx})
    d = data(pl.DataFrame(records))
    k = measure(prepare(d), power=power).counts
    assert k.min() >= 1 and (k >= 2).sum() > 60
    scores = person_scores(d, d, range(d.persons), power=power)
    assert (scores.exact <= 1 / k + 1e-12).all()
    assert (scores.singling_out[k >= 2] == 0).all()
    # a class of persons holding the same codes and more than k of them: exactly 1/k
    same = pl.DataFrame(
        [{"pid": f"Q{i}", "sex": "F", "birth": "1950", "dx": dx} for i in range(5) for dx in "AB"]
    )
    five = data(same)
    assert person_scores(five, five, range(5), power=power).exact.tolist() == pytest.approx(
        [1 / 5] * 5
    )


def brute_force(seen, released, target, power, leave, truth, held):  # type: ignore[no-untyped-def]
    """The scores of one target by plain enumeration over Python sets (the module
    docstring's rules): ``seen``/``released`` map id → (person-level tuple, codes);
    ``truth``/``held`` id → sensitive values (the target's; each released person's)."""
    from itertools import combinations

    q, codes = seen[target]
    known = sorted(codes)
    s = len(known) if power == "all" else min(power, len(known))
    sets = list(combinations(known, s))
    classes = {v[0] for v in released.values()}

    def mismatch(other):  # type: ignore[no-untyped-def]
        return sum(a != b for a, b in zip(q, other, strict=True))

    if q in classes:
        near = {q}
    else:
        best = min(mismatch(c) for c in classes)
        near = {c for c in classes if mismatch(c) == best}
    members = [j for j, v in released.items() if v[0] in near and not (leave and j == target)]
    everyone = {}
    for j in released:
        for value in held[j]:
            everyone[value] = everyone.get(value, 0) + 1
    single = exact = nearest = inferred = 0.0
    for known_set in sets:
        hits = {j: len(set(known_set) & released[j][1]) for j in members}
        top = max(hits.values(), default=0)
        candidates = [j for j in members if hits[j] == top]
        is_exact = q in classes and top == s and bool(candidates)
        single += is_exact and len(candidates) == 1
        if target in candidates:
            nearest += 1 / len(candidates)
            exact += is_exact / len(candidates)
        counts = {}
        for j in candidates:
            for value in held[j]:
                counts[value] = counts.get(value, 0) + 1
        counts = counts or everyone
        if counts and truth[target]:
            most = max(counts.values())
            modes = [v for v, n in counts.items() if n == most]
            inferred += sum(v in truth[target] for v in modes) / len(modes)
    n = len(sets)
    return single / n, exact / n, nearest / n, inferred / n


@pytest.mark.parametrize("trial", range(12))
def test_the_compiled_matching_equals_plain_enumeration(trial: int) -> None:
    rng = np.random.default_rng(100 + trial)
    records = []
    for i in range(14):
        sex, band = "FM"[int(rng.integers(0, 2))], str(int(rng.integers(0, 3)))
        outcome = "yn"[int(rng.integers(0, 2))]
        for _ in range(int(rng.integers(1, 5))):
            dx = "ABCDE"[int(rng.integers(0, 5))]
            records.append(
                {"pid": f"P{i:02d}", "sex": sex, "birth": band, "outcome": outcome, "dx": dx,
                 "drug": f"d{int(rng.integers(0, 3))}"}
            )  # fmt: skip
    frame = pl.DataFrame(records)
    # the release: some visits and some persons suppressed
    kept = frame.filter(
        pl.Series(rng.random(frame.height) > 0.2)
        & ~pl.col("pid").is_in([f"P{int(rng.integers(0, 14)):02d}" for _ in range(2)])
    )
    seen_data, released_data = data(frame), data(kept)

    def sets(f: pl.DataFrame, column: str) -> dict:  # type: ignore[type-arg]
        return {
            pid: set(group.get_column(column).to_list())
            for (pid,), group in f.group_by("pid", maintain_order=True)
        }

    def people(f: pl.DataFrame) -> dict:  # type: ignore[type-arg]
        first = f.unique("pid", keep="first", maintain_order=True)
        codes = sets(f, "dx")
        return {r["pid"]: ((r["sex"], r["birth"]), codes[r["pid"]]) for r in first.to_dicts()}

    seen, released = people(frame), people(kept)
    ids = seen_data.ids.to_list()
    power = [1, 2, 3, "all"][trial % 4]
    leave = [bool(rng.integers(0, 2)) for _ in ids]
    for column in ("outcome", "drug"):
        scores = person_scores(
            seen_data,
            released_data,
            range(len(ids)),
            power=power,
            leave_out=leave,
            sensitive=[column],
            seen_rows=rows(frame),
            released_rows=rows(kept),
        )
        truth, held = sets(frame, column), sets(kept, column)
        for t, pid in enumerate(ids):
            expected = brute_force(seen, released, pid, power, leave[t], truth, held)
            got = (
                scores.singling_out[t],
                scores.exact[t],
                scores.nearest[t],
                scores.inferred[column][t],
            )
            assert got == pytest.approx(expected), (trial, pid, column)


def test_more_known_sets_than_the_cap_are_drawn_with_the_seed() -> None:
    from apps.engine.attacks.person_index import MAX_KNOWN_SETS, code, known_sets

    # One person with 10 distinct codes at p = 3: 120 sets, more than 64: 64 are drawn,
    # each of 3 distinct codes of the person, the same for the same seed.
    frame = pl.DataFrame(
        {"pid": ["P1"] * 10 + ["P2"], "sex": ["F"] * 11, "birth": ["1970"] * 11,
         "dx": list("ABCDEFGHIJ") + ["A"]}
    )  # fmt: skip
    d = data(frame)
    coded = code(d, d)
    first = known_sets(
        coded.seen_offsets, coded.seen_features, np.array([0]), 3, np.random.default_rng(7)
    )
    again = known_sets(
        coded.seen_offsets, coded.seen_features, np.array([0]), 3, np.random.default_rng(7)
    )
    offsets, item_offsets, items = first
    assert offsets.tolist() == [0, MAX_KNOWN_SETS]
    assert (np.diff(item_offsets) == 3).all()
    assert all(len(set(items[i : i + 3].tolist())) == 3 for i in range(0, items.size, 3))
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    # P2 holds only A, so no set of 3 codes matches P2: P1 is singled out and linked on
    # every draw
    scores = person_scores(d, d, [0], power=3, seed=7)
    assert (scores.singling_out[0], scores.exact[0]) == (1.0, 1.0)


def test_derived_facts_seen_alike_on_originals_and_a_shifted_release():
    from datetime import date, timedelta

    from apps.engine.longitudinal import DateSpec, EventCountSpec
    from apps.engine.longitudinal.formulas import ALL
    from apps.engine.longitudinal.release import labelled_data

    # Four persons (all F): Q1 {0, 30}, Q2 {0, 30}, Q3 {0, 14}, Q4 {0, 14, 30} days from
    # their first date (2020, mid-year); the release shifts every person's dates by their
    # own offset. Counts 2, 2, 2, 3 (top-code 3). What both sides read: the anchor at the
    # year (±30 days), the intervals to the day, the count: Q4 alone on "3+" → singled out
    # and linked every time; Q1, Q2 know {0, 30} → Q1, Q2 (Q4 is "3+") → linked 1/2; Q3
    # knows {0, 14} alone in "2" → 1.
    firsts = {"Q1": "2020-06-01", "Q2": "2020-06-10", "Q3": "2020-06-05", "Q4": "2020-06-20"}
    steps = {"Q1": (0, 30), "Q2": (0, 30), "Q3": (0, 14), "Q4": (0, 14, 30)}
    offsets = {"Q1": 12, "Q2": -25, "Q3": 3, "Q4": -7}  # the release's secret

    def table(shift: bool) -> pl.DataFrame:
        rows = [
            {
                "pid": pid,
                "sex": "F",
                "day": str(
                    date.fromisoformat(firsts[pid])
                    + timedelta(days=d + (offsets[pid] if shift else 0))
                ),
            }
            for pid in firsts
            for d in steps[pid]
        ]
        return pl.DataFrame(rows)

    spec = DateSpec(("day",), "anchored", 30)
    prepared = [
        prepare(
            from_long_table(table(s), person="pid", person_quasi=["sex"], event_quasi=["day"]),
            dates=spec,
            event_count=EventCountSpec(top=3),
        )
        for s in (False, True)
    ]
    view = (["sex", "event_count", "anchor"], ["day"])
    seen, released = (labelled_data(p, {}, *view) for p in prepared)
    assert seen.person_values.equals(released.person_values)
    assert seen.person_values.get_column("event_count").to_list() == ["2", "2", "2", "3+"]
    assert seen.person_values.get_column("anchor").to_list() == ["2020"] * 4
    assert seen.tables[0].values.get_column("day").to_list() == [
        "0", "30", "0", "30", "0", "14", "0", "14", "30",
    ]  # fmt: skip
    scores = person_scores(seen, released, [0, 1, 2, 3], power=ALL)
    assert scores.singling_out.tolist() == [0.0, 0.0, 1.0, 1.0]
    assert scores.exact.tolist() == [0.5, 0.5, 1.0, 1.0]
