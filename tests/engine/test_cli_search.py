"""`search` and `apply` on the command line (python -m apps.engine.cli ...)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from apps.engine.cli import main
from apps.engine.reading import read_table
from tests.engine.benchmark_data import require
from tests.engine.conftest import ADULT, ADULT_COLUMNS, ARX_DIR

ROOT = Path(__file__).resolve().parents[2]


def write_tiny(tmp_path: Path) -> list[str]:
    data = tmp_path / "tiny.csv"
    data.write_text(
        "name;a;b\n"
        + "".join(
            f"p{i};{a};{b}\n"
            for i, (a, b) in enumerate(
                [("a1", "b1")] * 2 + [("a2", "b1"), ("a2", "b2")] + [("a3", "b2")] * 2
            )
        )
    )
    (tmp_path / "ha.csv").write_text("a1;a12;*\na2;a12;*\na3;a3;*\n")
    (tmp_path / "hb.csv").write_text("b1;*\nb2;*\n")
    return [
        str(data), "--sep", ";", "--quasi", "a,b",
        "--hierarchy", f"a={tmp_path / 'ha.csv'}", "--hierarchy", f"b={tmp_path / 'hb.csv'}",
    ]  # fmt: skip


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_search_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_tiny(tmp_path)
    out = run_json(["search", *base, "--k", "2", "--suppression-limit", "0.2", "--json"], capsys)
    assert out["levels"] == {"a": 1, "b": 0}
    assert out["suppressed_rows"] == 1
    assert out["equivalence_classes"] == 2
    assert out["min_class_size"] == 2
    assert out["max_risk"] == 0.5
    assert out["optimal"] is True
    assert out["nodes_total"] == 6
    assert 0 < out["nodes_evaluated"] <= 6
    assert out["seconds"] > 0
    assert [p["levels"] for p in out["pareto"]] == [{"a": 1, "b": 0}, {"a": 0, "b": 1}]
    assert out["missingness"]["records"] == pytest.approx(1 / 6)


def test_search_criteria_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_tiny(tmp_path)
    by_risk = run_json(["search", *base, "--max-risk", "0.5", "--json"], capsys)
    assert by_risk["release_size"] == 2
    model = run_json(
        ["search", *base, "--release-model", "public", "--threshold", "0.25",
         "--context-risk", "0.5", "--json", "--no-pareto"],
        capsys,
    )  # fmt: skip
    assert model["release_size"] == 2  # target 0.25 / 0.5 = 0.5
    assert model["pareto"] == []
    capped = run_json(["search", *base, "--k", "2", "--max-level", "b=0", "--json"], capsys)
    assert capped["levels"]["b"] == 0
    entropy = run_json(["search", *base, "--k", "2", "--metric", "entropy", "--json"], capsys)
    assert 0 <= entropy["entropy_percent"] <= 100
    none = run_json(["search", *base, "--k", "7", "--suppression-limit", "0", "--json"], capsys)
    assert none["levels"] is None


def test_search_text_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", *write_tiny(tmp_path), "--k", "2"]) == 0
    assert "levels" in capsys.readouterr().out


def test_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_tiny(tmp_path)
    assert main(["search", *base]) == 2  # no criterion
    assert main(["search", *base, "--k", "2", "--max-level", "b"]) == 2
    assert main(["search", *base[:5], "--hierarchy", f"a={tmp_path / 'ha.csv'}", "--k", "2"]) == 2
    assert main(["search", *base, "--release-model", "public", "--k", "2"]) == 2
    err = capsys.readouterr().err
    assert "error" in err


def test_apply(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_tiny(tmp_path)
    out_file = tmp_path / "release.parquet"
    out = run_json(
        ["apply", *base, "--k", "2", "--suppression-limit", "0.2", "--levels", "a=1,b=0",
         "--out", str(out_file), "--direct", "name", "--seed", "3", "--json"],
        capsys,
    )  # fmt: skip
    assert out["rows_out"] == 5
    assert out["suppressed_rows"] == 1
    assert out["min_class_size"] == 2
    assert out["passes"] is True
    written = read_table(out_file).collect()
    assert written.columns == ["a", "b"]
    # without --levels the optimal levels are used
    out2 = run_json(
        ["apply", *base, "--k", "2", "--out", str(tmp_path / "r.csv"), "--json"], capsys
    )
    assert out2["levels"] == {"a": 0, "b": 1}


def test_module_entry_point_on_adult(tmp_path: Path) -> None:
    require(ADULT)
    hierarchies = [
        arg
        for q in ADULT_COLUMNS
        for arg in ("--hierarchy", f"{q}={ARX_DIR / f'adult_hierarchy_{q}.csv'}")
    ]
    cmd = [sys.executable, "-m", "apps.engine.cli", "search", str(ADULT), "--sep", ";",
           "--quasi", ",".join(ADULT_COLUMNS), *hierarchies, "--k", "5", "--json"]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    out = json.loads(done.stdout)
    assert list(out["levels"].values()) == [0, 3, 0, 0, 2, 1, 1, 2, 0]
    assert out["suppressed_rows"] == 1346
    assert out["optimal"] is True


# The salary/disease table of Li, Li & Venkatasubramanian (ICDE 2007, t-closeness), with
# the hierarchies ARX ships for it (its data/test2*). Expected: ARX 3.9.2's optimum,
# suppressed rows and score for the same configurations (loss, DECIMAL salary for
# ordered distance), run from a build of ARX's source outside this repository.
LI_ROWS = [
    ("47677", "29", "3", "gastric ulcer"),
    ("47602", "22", "4", "gastritis"),
    ("47678", "27", "5", "stomach cancer"),
    ("47905", "43", "6", "gastritis"),
    ("47909", "52", "11", "flu"),
    ("47906", "47", "8", "bronchitis"),
    ("47605", "30", "7", "bronchitis"),
    ("47673", "36", "9", "pneumonia"),
    ("47607", "32", "10", "stomach cancer"),
]
DISEASE_TREE = {
    "gastric ulcer": "stomach disease;digestive system disease",
    "gastritis": "stomach disease;digestive system disease",
    "stomach cancer": "stomach disease;digestive system disease",
    "flu": "respiratory infection;vascular lung disease",
    "bronchitis": "respiratory infection;vascular lung disease",
    "pneumonia": "respiratory infection;vascular lung disease",
}


def write_li(tmp_path: Path) -> list[str]:
    data = tmp_path / "li.csv"
    data.write_text("ZIPCode;Age;Salary;Disease\n" + "".join(";".join(r) + "\n" for r in LI_ROWS))
    (tmp_path / "zip.csv").write_text(
        "".join(f"{z};{z[:4]}*;{z[:3]}**;{z[:2]}***;{z[:1]}****;*****\n" for z, *_ in LI_ROWS)
    )
    ages = {
        a: "[20,30[" if int(a) < 30 else "[30,40[" if int(a) < 40 else ">=40"
        for _, a, *_ in LI_ROWS
    }
    (tmp_path / "age.csv").write_text("".join(f"{a};{g};*\n" for a, g in ages.items()))
    (tmp_path / "disease.csv").write_text(
        "".join(f"{d};{up};respiratory&digestive disease\n" for d, up in DISEASE_TREE.items())
    )
    return [
        str(data), "--sep", ";", "--quasi", "ZIPCode,Age",
        "--hierarchy", f"ZIPCode={tmp_path / 'zip.csv'}", "--hierarchy", f"Age={tmp_path / 'age.csv'}",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("k", "limit", "options", "levels", "suppressed", "loss"),
    [
        (3, 0.0, ["--sensitive", "Salary", "--criterion", "ordered-t=0.375"], (1, 2), 0, 0.5811388300841898),
        (3, 0.34, ["--sensitive", "Salary", "--criterion", "ordered-t=0.375"], (2, 1), 3, 0.5612494995995994),
        (3, 0.0, ["--sensitive", "Disease", "--criterion", "hierarchical-t=0.3", "--sensitive-hierarchy", "{tree}"], (1, 2), 0, 0.5811388300841898),
        (3, 0.34, ["--sensitive", "Disease", "--criterion", "hierarchical-t=0.3", "--sensitive-hierarchy", "{tree}"], (2, 1), 3, 0.5612494995995994),
        (2, 0.0, ["--sensitive", "Disease", "--criterion", "equal-t=0.6"], (2, 1), 0, 0.3693063937629153),
        (2, 0.34, ["--sensitive", "Disease", "--criterion", "entropy-l=2.5"], (2, 1), 0, 0.3693063937629153),
        (2, 0.0, ["--sensitive", "Disease", "--criterion", "distinct-l=3"], (2, 1), 0, 0.3693063937629153),
    ],
)  # fmt: skip
def test_search_sensitive_models_match_arx(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    k: int,
    limit: float,
    options: list[str],
    levels: tuple[int, int],
    suppressed: int,
    loss: float,
) -> None:
    base = write_li(tmp_path)
    options = [o.format(tree=tmp_path / "disease.csv") for o in options]
    argv = ["search", *base, "--k", str(k), "--suppression-limit", str(limit), *options, "--json"]
    out = run_json(argv, capsys)
    assert (out["levels"]["ZIPCode"], out["levels"]["Age"]) == levels
    assert out["suppressed_rows"] == suppressed
    assert out["information_loss"] == pytest.approx(loss, rel=1e-12)
    assert out["sensitive"] == options[1]
    assert out["sensitive_criteria"] == [options[3]]


def test_sensitive_option_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_li(tmp_path)
    cases = {
        "ordered-distance t-closeness needs numbers in 'Disease'": [
            "--sensitive", "Disease", "--criterion", "ordered-t=0.2",
        ],
        "need --sensitive COL": ["--criterion", "distinct-l=2"],
        "give at least one --criterion": ["--sensitive", "Disease"],
        "must not be one": ["--sensitive", "Age", "--criterion", "distinct-l=2"],
        "needs --sensitive-hierarchy": ["--sensitive", "Disease", "--criterion", "hierarchical-t=0.2"],
        "not understood": ["--sensitive", "Disease", "--criterion", "l=2"],
    }  # fmt: skip
    for message, options in cases.items():
        assert main(["search", *base, "--k", "2", *options]) == 2
        assert message in capsys.readouterr().err


def test_apply_with_sensitive_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_li(tmp_path)
    out_file = tmp_path / "out.csv"
    argv = ["apply", *base, "--k", "3", "--suppression-limit", "0.34", "--sensitive", "Salary",
            "--criterion", "ordered-t=0.375", "--out", str(out_file), "--seed", "1", "--json"]  # fmt: skip
    out = run_json(argv, capsys)
    assert out["levels"] == {"ZIPCode": 2, "Age": 1}
    assert out["suppressed_rows"] == 3
    assert out["passes"] is True
    assert out["information_loss"]["loss"] == pytest.approx(0.5612494995995994, rel=1e-12)
    released = read_table(out_file, sep=",").collect()
    # The sensitive column and the other column are carried unchanged.
    assert released.columns == ["ZIPCode", "Age", "Salary", "Disease"]
    kept = sorted(zip(released["Salary"].to_list(), released["Disease"].to_list(), strict=True))
    assert len(kept) == 6
    assert set(kept) <= {(s, d) for _, _, s, d in LI_ROWS}


def test_search_repeat_times_every_run_from_the_strings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--repeat N`` runs the timed part N times in one process under ARX's protocol:
    every run encodes the table again, looks every value up again and searches a new
    problem (nothing kept from a run for the next); ``seconds`` stays the first run,
    ``seconds_median`` is the median of the others."""
    import statistics

    from apps.engine.search import optimal as optimal_module
    from apps.engine.search import protocol

    encodes, lookups, problems = [], [], []
    real_encode, real_lookup = protocol.encode, protocol.lookup_columns
    real_search = optimal_module.optimal_search

    def counting_encode(*args, **kwargs):  # type: ignore[no-untyped-def]
        encodes.append(1)
        return real_encode(*args, **kwargs)

    def counting_lookup(hierarchies, dictionaries, views=None):  # type: ignore[no-untyped-def]
        lookups.extend(h.column for h in hierarchies)
        return real_lookup(hierarchies, dictionaries, views)

    def fresh_search(problem, *args, **kwargs):  # type: ignore[no-untyped-def]
        assert not problem.memo, "a problem searched before"
        problems.append(problem)
        return real_search(problem, *args, **kwargs)

    monkeypatch.setattr(protocol, "encode", counting_encode)
    monkeypatch.setattr(protocol, "lookup_columns", counting_lookup)
    monkeypatch.setattr(protocol, "optimal_search", fresh_search)
    base = write_tiny(tmp_path)
    argv = ["search", *base, "--k", "2", "--suppression-limit", "0.2", "--no-pareto"]
    out = run_json([*argv, "--repeat", "4", "--json"], capsys)
    ours = sorted(c for c in lookups if c in ("a", "b"))  # (not the warm-up's own)
    assert len(encodes) == 4 and ours == ["a"] * 4 + ["b"] * 4
    assert len({id(p) for p in problems}) == 4
    runs = out["seconds_runs"]
    assert len(runs) == 4 and all(r > 0 for r in runs)
    assert out["seconds"] == runs[0]
    assert out["seconds_median"] == statistics.median(runs[1:])
    assert out["levels"] == {"a": 1, "b": 0}  # the same result as one run
    single = run_json([*argv, "--json"], capsys)
    assert "seconds_runs" not in single and "seconds_median" not in single
    assert main([*argv, "--repeat", "0"]) == 2
    assert "--repeat: must be at least 1, got 0" in capsys.readouterr().err
