"""Property tests of `deid measure/search --person` through the command line.

test_properties.py checks the library on data built in memory; here random small data
sets are written to files the way a user would give them (one long table or a person
table plus an event table; CSV with ``,``, ``;`` or tab, or Parquet; person ids as
integers, text or UUIDs; column names with spaces and accents; values with commas,
quotes and accents; missing values; repeated events; persons without events; ARX
hierarchy files of 1-3 levels that may hold values absent from the data) and the
command's ``--json`` is compared with a brute-force enumeration written here:

* per person, the strict count = min over the person's p-subsets of distinct
  features of the persons in the same person-level class whose feature set contains
  the subset (p above the person's feature count: the whole set; "all": an equal set);
  ``min_class_size``, ``max_risk``, ``average_risk``, ``persons_at_risk`` and every
  ``by_power`` entry follow from those counts;
* `search`: every node of the lattice evaluated with the plain suppression procedure
  of test_properties.py (LONGITUDINAL.md §3.2 steps 4-5) and Iyengar's Loss recounted
  here; the command's optimum must pass with the smallest loss of a passing node.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from collections import defaultdict
from datetime import date, timedelta
from fractions import Fraction
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from apps.engine.cli import main
from apps.engine.criteria import allowed_suppression
from apps.engine.loss import geometric_mean_loss, loss_of_dimension
from tests.engine.longitudinal.test_properties import _reference_suppression, _sets_after

REPORTED = ("1", "2", "3", "4", "5", "all")
PERSON_COLUMNS = ("pid", "Patient ID", "n°_patient")
PERSON_QI_NAMES = ("sex", "birth year", "Région")
EVENT_QI_NAMES = ("diag", "Service hospitalier", "code_acte")
# leaf labels: plain, numeric (natural order), with a comma, a quote, an accent
LABELS = ("A", "b", "10", "9", "x,y", 'q"t', "été", "Z 1")
SETTINGS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)

Rows = list[tuple[str, ...]]


# --------------------------------------------------------------------------- random data sets


@st.composite
def hierarchy(draw: Any, leaves: list[str]) -> Rows:
    """ARX rows over ``leaves`` (plus maybe a value absent from the data): 1-3 levels,
    each grouping the level below, the top sometimes a single value."""
    extra = draw(st.booleans())
    values = [*leaves, *(["unused"] if extra else [])]
    height = draw(st.integers(1, 3))
    rows = [[v] for v in values]
    groups = list(range(len(values)))
    for level in range(1, height + 1):
        if level == height and draw(st.booleans()):
            labels = dict.fromkeys(set(groups), "*")
        else:
            labels = {g: f"L{level}g{draw(st.integers(0, 2))}" for g in sorted(set(groups))}
        for row, g in zip(rows, groups, strict=True):
            row.append(labels[g])
        groups = [hash(labels[g]) for g in groups]
    return [tuple(r) for r in rows]


@st.composite
def datasets(draw: Any, *, missing: bool = True) -> dict[str, Any]:
    n = draw(st.integers(1, 12))
    style = draw(st.sampled_from(["int", "text", "uuid"]))
    if style == "int":
        ids = [
            str(i) for i in draw(st.lists(st.integers(0, 120), min_size=n, max_size=n, unique=True))
        ]
    elif style == "text":
        ids = [f"pt-{i:02d}" for i in range(n)]
    else:
        ids = [str(u) for u in draw(st.lists(st.uuids(), min_size=n, max_size=n, unique=True))]
    person_q = list(PERSON_QI_NAMES[: draw(st.integers(1, 2))])
    event_q = list(EVENT_QI_NAMES[: draw(st.integers(1, 2))])
    domains: dict[str, list[str]] = {}
    hierarchies: dict[str, Rows] = {}
    for q in [*person_q, *event_q]:
        size = draw(st.integers(1, 3 if q in person_q else 4))
        domains[q] = draw(
            st.lists(st.sampled_from(LABELS), min_size=size, max_size=size, unique=True)
        )
        hierarchies[q] = draw(hierarchy(domains[q]))

    def value(q: str) -> str | None:
        if missing and draw(st.integers(0, 9)) == 0:
            return None
        return draw(st.sampled_from(domains[q]))

    shape = draw(st.sampled_from(["long", "tables"]))
    person_values = {pid: {q: value(q) for q in person_q} for pid in ids}
    events: list[tuple[str, dict[str, str | None]]] = []
    for pid in ids:
        # few distinct events, often repeated; a long table has at least one per person
        low = 1 if shape == "long" else 0
        distinct = [{q: value(q) for q in event_q} for _ in range(draw(st.integers(low, 3)))]
        for _ in range(draw(st.integers(max(low, len(distinct) and 1), 5)) if distinct else 0):
            events.append((pid, draw(st.sampled_from(distinct))))
    order = draw(st.permutations(range(len(events))))  # rows in any order
    return {
        "ids": ids,
        "id_style": style,
        "person_column": draw(st.sampled_from(PERSON_COLUMNS)),
        "person_key": draw(st.sampled_from(["person_key", *PERSON_COLUMNS])),
        "person_quasi": person_q,
        "event_quasi": event_q,
        "hierarchies": hierarchies,
        "person_values": person_values,
        "events": [events[i] for i in order],
        "shape": shape,
        "format": draw(st.sampled_from([",", ";", "\t", "parquet"])),
    }


def _write_table(path: Path, columns: list[str], rows: list[list[str | None]], fmt: str) -> str:
    if fmt == "parquet":
        target = path.with_suffix(".parquet")
        pl.DataFrame(
            {c: [r[j] for r in rows] for j, c in enumerate(columns)},
            schema={c: pl.String for c in columns},
        ).write_parquet(target)
        return str(target)
    target = path.with_suffix(".tsv" if fmt == "\t" else ".csv")
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=fmt, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([["" if v is None else v for v in r] for r in rows])
    target.write_text(buffer.getvalue(), encoding="utf-8")
    return str(target)


def write_files(data: dict[str, Any], folder: Path) -> list[str]:
    """Write the data set and its hierarchies; return the command's data arguments."""
    person, pq, fmt = data["person_column"], data["person_quasi"], data["format"]
    eq = [*data["event_quasi"], *data.get("dates", [])]  # date columns are event-level
    args: list[str]
    if data["shape"] == "long":
        columns = [person, *pq, *eq]
        rows = [
            [pid, *(data["person_values"][pid][q] for q in pq), *(values[q] for q in eq)]
            for pid, values in data["events"]
        ]
        events = _write_table(folder / "long", columns, rows, fmt)
        args = [events, "--person", person]
    else:
        key = data["person_key"]
        rows = [[pid, *(data["person_values"][pid][q] for q in pq)] for pid in data["ids"]]
        persons = _write_table(folder / "persons", [key, *pq], rows, fmt)
        event_rows = [[pid, *(values[q] for q in eq)] for pid, values in data["events"]]
        if not event_rows:  # an event file needs a row: then one person has one event
            first = {q: data["hierarchies"][q][0][0] for q in data["event_quasi"]}
            first.update(dict.fromkeys(data.get("dates", []), "2020-01-01"))
            data["events"] = [(data["ids"][0], first)]
            event_rows = [[data["ids"][0], *(first[q] for q in eq)]]
        events = _write_table(folder / "events", [person, *eq], event_rows, fmt)
        args = [events, "--person", person, "--persons", persons, "--person-key", key]
    if fmt not in ("parquet", "\t"):
        args += ["--sep", fmt]
    for q, rows_ in data["hierarchies"].items():
        path = folder / f"h{[*pq, *eq].index(q)}.csv"
        buffer = io.StringIO()
        csv.writer(buffer, delimiter=";", lineterminator="\n").writerows(rows_)
        path.write_text(buffer.getvalue(), encoding="utf-8")
        args += ["--hierarchy", f"{q}={path}"]
    args += ["--quasi", ",".join(pq), "--event-quasi", ",".join(data["event_quasi"])]
    return [*args, *(["--dates", ",".join(data["dates"])] if data.get("dates") else [])]


# --------------------------------------------------------------------------- brute force


def generalize(rows: Rows, value: str | None, level: int) -> Any:
    """A value at a level of its hierarchy; the missing value stays missing (sorted
    last), except at a top that is one value for every leaf."""
    if value is None:
        tops = {r[-1] for r in rows}
        return rows[0][-1] if level == len(rows[0]) - 1 and len(tops) == 1 else ("<missing>",)
    return next(r[level] for r in rows if r[0] == value)


def plain_classes(
    data: dict[str, Any], levels: dict[str, int]
) -> tuple[list[Any], list[dict[Any, int]]]:
    """Each person's generalized person-level tuple and feature -> number of events."""
    h = data["hierarchies"]
    ids = sorted(data["ids"], key=lambda v: (int(v), v) if data["id_style"] == "int" else (0, v))
    position = {pid: i for i, pid in enumerate(ids)}
    keys = [
        tuple(
            generalize(h[q], data["person_values"][pid][q], levels[q]) for q in data["person_quasi"]
        )
        for pid in ids
    ]
    features: list[dict[Any, int]] = [defaultdict(int) for _ in ids]
    for pid, values in data["events"]:
        feature = (0, tuple(generalize(h[q], values[q], levels[q]) for q in data["event_quasi"]))
        features[position[pid]][feature] += 1
    return keys, features


def strict_counts(
    keys: list[Any], sets: list[set[Any]], power: str, alive: list[bool] | None = None
) -> list[int]:
    """Per-person strict counts of the persons still released (``alive``)."""
    alive = alive or [True] * len(keys)
    out = []
    for i, own in enumerate(sets):
        peers = [sets[j] for j in range(len(keys)) if alive[j] and keys[j] == keys[i]]
        if power == "all":
            out.append(sum(1 for other in peers if other == own))
            continue
        size = min(int(power), len(own))
        out.append(
            min(
                sum(1 for other in peers if set(subset) <= other)
                for subset in itertools.combinations(sorted(own, key=repr), size)
            )
        )
    return out


def figures(counts: list[int], target: Fraction) -> dict[str, Any]:
    return {
        "min_class_size": min(counts),
        "max_risk": 1 / min(counts),
        "average_risk": sum(Fraction(1, c) for c in counts) / len(counts),
        "persons_at_risk": sum(1 for c in counts if Fraction(1, c) > target),
    }


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


def _levels(draw: Any, data: dict[str, Any]) -> dict[str, int]:
    return {q: draw(st.integers(0, len(rows[0]) - 1)) for q, rows in data["hierarchies"].items()}


def _fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli")


# --------------------------------------------------------------------------- measure


@SETTINGS
@given(data=st.data())
def test_measure_equals_the_subset_enumeration(
    data: Any, capsys: pytest.CaptureFixture[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    dataset = data.draw(datasets())
    argv = write_files(dataset, _fresh(tmp_path_factory))
    levels = _levels(data.draw, dataset)
    power = data.draw(st.sampled_from([str(p) for p in range(1, 11)] + ["all", "ALL"])).lower()
    target = data.draw(st.sampled_from(["0.2", "0.25", "0.34", "0.5", "1"]))
    report = run(
        capsys,
        [
            "measure",
            *argv,
            "--power",
            power,
            "--target",
            target,
            "--levels",
            ",".join(f"{q}={lv}" for q, lv in levels.items()),
        ],
    )
    keys, features = plain_classes(dataset, levels)
    sets = [set(f) for f in features]
    event(f"shape {dataset['shape']}, ids {dataset['id_style']}, format {dataset['format']!r}")
    event(f"persons without events: {any(not s for s in sets)}")
    assert report["unit"] == "person"
    assert report["persons"] == len(dataset["ids"])
    assert report["events"] == len(dataset["events"])
    assert report["power"] == (power if power == "all" else int(power))
    assert report["levels"] == levels
    assert report["person_classes"] == len(set(keys))
    expected = figures(strict_counts(keys, sets, power), Fraction(target))
    for name, value in expected.items():
        assert report[name] == pytest.approx(float(value), abs=1e-12), name
    assert set(report["by_power"]) == set(REPORTED)
    for p in REPORTED:
        expected = figures(strict_counts(keys, sets, p), Fraction(target))
        for name, value in expected.items():
            assert report["by_power"][p][name] == pytest.approx(float(value), abs=1e-12), (p, name)


# --------------------------------------------------------------------------- search


def plain_loss(
    data: dict[str, Any],
    levels: dict[str, int],
    keys: list[Any],
    features: list[dict[Any, int]],
    alive: list[bool],
    sets: list[set[Any]],
) -> float:
    """Iyengar's Loss per QI (persons for person-level, events for event-level; a
    suppressed person or event covers the whole domain), geometric mean over QIs."""
    h = data["hierarchies"]
    ids = sorted(data["ids"], key=lambda v: (int(v), v) if data["id_style"] == "int" else (0, v))
    position = {pid: i for i, pid in enumerate(ids)}

    def covered(q: str, value: str) -> int:
        label = generalize(h[q], value, levels[q])
        return sum(1 for r in h[q] if r[levels[q]] == label)

    losses = []
    for q in data["person_quasi"]:
        weighted = sum(
            covered(q, data["person_values"][pid][q]) if alive[position[pid]] else len(h[q])
            for pid in ids
        )
        losses.append(loss_of_dimension(weighted, len(ids), len(h[q])))
    for q in data["event_quasi"]:
        weighted = 0
        for pid, values in data["events"]:
            i = position[pid]
            feature = (
                0,
                tuple(generalize(h[q2], values[q2], levels[q2]) for q2 in data["event_quasi"]),
            )
            weighted += covered(q, values[q]) if alive[i] and feature in sets[i] else len(h[q])
        losses.append(loss_of_dimension(weighted, len(data["events"]), len(h[q])))
    return geometric_mean_loss(losses)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(data=st.data())
def test_search_equals_exhaustive_evaluation_of_the_lattice(
    data: Any, capsys: pytest.CaptureFixture[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    dataset = data.draw(datasets(missing=False))
    argv = write_files(dataset, _fresh(tmp_path_factory))
    power = data.draw(st.sampled_from(["1", "2", "3", "all"]))
    k = data.draw(st.integers(2, 3))
    person_limit = data.draw(st.sampled_from(["0", "0.1", "0.3", "1"]))
    event_limit = data.draw(st.sampled_from(["0", "0.1", "0.3", "1"]))
    report = run(
        capsys,
        [
            "search",
            *argv,
            "--power",
            power,
            "--k",
            str(k),
            "--suppression-limit",
            person_limit,
            "--event-suppression-limit",
            event_limit,
        ],
    )
    persons, events = len(dataset["ids"]), len(dataset["events"])
    person_budget = allowed_suppression(persons, float(person_limit))
    event_budget = allowed_suppression(events, float(event_limit))
    names = [*dataset["person_quasi"], *dataset["event_quasi"]]
    heights = [len(dataset["hierarchies"][q][0]) - 1 for q in names]
    passing: dict[tuple[int, ...], tuple[float, int, int, int]] = {}
    for node in itertools.product(*(range(h + 1) for h in heights)):
        levels = dict(zip(names, node, strict=True))
        keys, features = plain_classes(dataset, levels)
        passes, alive, spent, removed = _reference_suppression(
            keys, features, power if power == "all" else int(power), k, event_budget, person_budget
        )
        if not passes:
            continue
        sets = _sets_after(keys, features, power if power == "all" else int(power), k, event_budget)
        counts = [
            c for c, a in zip(strict_counts(keys, sets, power, alive), alive, strict=True) if a
        ]
        loss = plain_loss(dataset, levels, keys, features, alive, sets)
        passing[node] = (loss, removed, spent, min(counts) if counts else 0)
    event(f"passing nodes: {bool(passing)}")
    if not passing:
        assert report["levels"] is None
        return
    assert report["levels"] is not None
    node = tuple(report["levels"][q] for q in names)
    assert node in passing, "the command's optimum does not pass"
    loss, removed, spent, smallest = passing[node]
    assert report["information_loss"] == pytest.approx(loss, abs=1e-12)
    assert loss == pytest.approx(min(v[0] for v in passing.values()), abs=1e-12)
    assert (report["suppressed_persons"], report["suppressed_events"]) == (removed, spent)
    assert report["suppressed_persons"] <= person_budget
    assert report["suppressed_events"] <= event_budget
    assert report["min_class_size"] == smallest
    event(f"optimum suppresses: {removed > 0 or spent > 0}")


# --------------------------------------------------------------------------- dates, event count

DATE_COLUMN = "date d'admission"
BASE = date(2019, 12, 20)


@st.composite
def dated(draw: Any) -> dict[str, Any]:
    """A data set whose events also carry a date (some with a time of day)."""
    dataset = draw(datasets())
    seen: set[int] = set()
    for _, values in dataset["events"]:
        if id(values) in seen:  # a repeated event keeps its date
            continue
        seen.add(id(values))
        day = BASE + timedelta(
            days=draw(st.sampled_from([0, 3, 12, 40, 95, 112, 200, 370, 800, 2000]))
        )
        values[DATE_COLUMN] = day.isoformat() + draw(st.sampled_from(["", " 08:30:00"]))
    dataset["dates"] = [DATE_COLUMN]
    return dataset


def _day(text: str) -> date:
    return date.fromisoformat(text[:10])


def count_label(count: int, level: int, top: int | None) -> Any:
    """Number of events: exact, 0|1|2-3|4-7|8-15|16+, 0|1|2+, * (the bin holding the
    top-code and every bin above it merged)."""
    if level == 3:
        return "*"
    if level == 0:
        return ("top", top) if top is not None and count >= top else count
    lows = [0, 1, 2, 4, 8, 16] if level == 1 else [0, 1, 2]
    lows = [low for low in lows if top is None or low <= top]
    return max(low for low in lows if low <= count)


def calendar(day: date, level: int) -> Any:
    return (day, (day.year, day.month), (day.year, (day.month - 1) // 3), day.year, "*")[level]


def anchor_label(day: date | None, level: int) -> Any:
    if level == 4:
        return "*"
    if day is None:
        return ("<missing>",)
    return (day, (day.year, day.month), day.year, day.year // 5)[level]


def interval_label(days: int, level: int) -> Any:
    return days if level == 0 else ("*" if level == 5 else days // (7, 30, 90, 365)[level - 1])


@SETTINGS
@given(data=st.data())
def test_measure_with_dates_and_event_count_equals_the_enumeration(
    data: Any, capsys: pytest.CaptureFixture[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    dataset = data.draw(dated())
    argv = write_files(dataset, _fresh(tmp_path_factory))
    mode = data.draw(st.sampled_from(["absolute", "anchored", "shifted"]))
    shift = data.draw(st.sampled_from([10, 100, 400])) if mode == "shifted" else None
    top_option = data.draw(st.sampled_from(["none", "p95", "1", "2", "3"]))
    levels = _levels(data.draw, dataset)
    levels["event_count"] = data.draw(st.integers(0, 3))
    if mode == "absolute":
        levels[DATE_COLUMN] = data.draw(st.integers(0, 4))
        argv += ["--date-mode", "absolute"]
    else:
        floor = (
            0
            if shift is None
            else next(
                (lv for lv, width in enumerate((1, 31, 366, 1827)) if width >= 2 * shift + 1), 4
            )
        )
        levels["anchor"] = data.draw(st.integers(floor, 4))
        levels[DATE_COLUMN] = data.draw(st.integers(0, 5))
        argv += ["--date-mode", "anchored"] + (["--shift-days", str(shift)] if shift else [])
    power = data.draw(st.sampled_from(["1", "2", "3", "all"]))
    report = run(
        capsys,
        [
            "measure",
            *argv,
            "--event-count",
            "--event-count-top",
            top_option,
            "--power",
            power,
            "--levels",
            ",".join(f"{q}={lv}" for q, lv in levels.items()),
        ],
    )
    # brute force: the given QIs, then the derived person-level ones, then the dates
    keys, features = plain_classes(dataset, levels)
    ids = sorted(
        dataset["ids"], key=lambda v: (int(v), v) if dataset["id_style"] == "int" else (0, v)
    )
    position = {pid: i for i, pid in enumerate(ids)}
    counts = [0] * len(ids)
    first: list[date | None] = [None] * len(ids)
    for pid, values in dataset["events"]:
        i = position[pid]
        counts[i] += 1
        day = _day(values[DATE_COLUMN])
        first[i] = day if first[i] is None else min(first[i], day)
    if top_option == "none":
        top = None
    elif top_option == "p95":
        ordered = sorted(counts)
        top = max(1, ordered[max(1, math.ceil(0.95 * len(ordered))) - 1])
    else:
        top = int(top_option)
    assert report["event_count_top"] == top
    keys = [
        (*key, count_label(counts[i], levels["event_count"], top))
        + (() if mode == "absolute" else (anchor_label(first[i], levels["anchor"]),))
        for i, key in enumerate(keys)
    ]
    dated_features: list[set[Any]] = [set() for _ in ids]
    h = dataset["hierarchies"]
    for pid, values in dataset["events"]:
        i = position[pid]
        day = _day(values[DATE_COLUMN])
        assert first[i] is not None
        when = (
            calendar(day, levels[DATE_COLUMN])
            if mode == "absolute"
            else interval_label((day - first[i]).days, levels[DATE_COLUMN])
        )
        feature = tuple(generalize(h[q], values[q], levels[q]) for q in dataset["event_quasi"])
        dated_features[i].add((feature, when))
    assert len(dated_features) == len(features)
    event(f"date mode {mode}, top {top_option}")
    assert report["levels"] == levels
    assert report["person_classes"] == len(set(keys))
    expected = figures(strict_counts(keys, dated_features, power), Fraction("0.2"))
    for name, value in expected.items():
        assert report[name] == pytest.approx(float(value), abs=1e-12), name
    for p in REPORTED:
        expected = figures(strict_counts(keys, dated_features, p), Fraction("0.2"))
        for name, value in expected.items():
            assert report["by_power"][p][name] == pytest.approx(float(value), abs=1e-12), (p, name)
