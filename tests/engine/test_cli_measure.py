from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from apps.engine import cli
from tests.engine.conftest import ADULT_COLUMNS, adult_class_sizes

ROOT = Path(__file__).resolve().parents[2]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def measure_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = run(capsys, "measure", *argv, "--json")
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


@pytest.mark.parametrize("columns", [ADULT_COLUMNS, ADULT_COLUMNS[:-1]], ids=["9 QIs", "8 QIs"])
def test_adult_measure_is_exact(
    capsys: pytest.CaptureFixture[str], adult_path: Path, columns: tuple[str, ...]
) -> None:
    reference = adult_class_sizes(columns)  # csv + Counter, independent of polars
    report = measure_json(capsys, str(adult_path), "--quasi", ",".join(columns), "--sep", ";")
    rows, classes, smallest = sum(reference), len(reference), min(reference)
    assert report["rows"] == rows == 30_162
    assert report["equivalence_classes"] == classes
    assert report["min_class_size"] == smallest
    assert report["uniques"] == sum(1 for f in reference if f == 1)
    assert report["max_risk"] == 1 / smallest
    assert report["average_risk"] == pytest.approx(classes / rows, abs=1e-15)
    strict = 1 / smallest if 1 / smallest > 0.33 else classes / rows
    assert report["strict_average_risk"] == pytest.approx(strict)
    buckets = {
        "1": (1, 1),
        "2": (2, 2),
        "3-4": (3, 4),
        "5-9": (5, 9),
        "10-19": (10, 19),
        "20+": (20, 10**9),
    }
    for label, (low, high) in buckets.items():
        inside = [f for f in reference if low <= f <= high]
        assert report["class_size_histogram"][label] == {
            "classes": len(inside),
            "rows": sum(inside),
        }
    assert sum(report["class_size_counts"].values()) == classes
    assert report["seconds"] >= 0
    if len(columns) == 9:
        assert classes == 19_502


def test_adult_release_model_threshold_and_l_diversity(
    capsys: pytest.CaptureFixture[str], adult_path: Path
) -> None:
    quasi = ("sex", "age", "race")
    report = measure_json(
        capsys,
        str(adult_path),
        "--quasi",
        "sex,age",
        "--quasi",
        "race",
        "--release-model",
        "public",
        "--invasion-of-privacy",
        "low",
        "--sensitive",
        "salary-class",
    )
    reference = adult_class_sizes(quasi)
    assert report["data_risk"] == report["max_risk"] == 1 / min(reference)
    assert report["threshold"]["value"] == 0.1 and report["threshold"]["data_risk_target"] == 0.1
    risky = sum(f for f in reference if 1 / f > 0.1)
    assert report["records_at_risk"]["rows"] == risky
    assert report["records_at_risk"]["percent"] == pytest.approx(100 * risky / 30_162)
    (salary,) = report["l_diversity"]
    assert salary["column"] == "salary-class" and salary["smallest_l"] == 1


def test_text_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("sex,age\nF,30\nF,30\nM,40\n")
    code, out, _ = run(capsys, "measure", str(path), "--quasi", "sex,age", "--threshold", "0.5")
    assert code == 0
    assert "3 rows" in out and "equivalence classes   2" in out and "unique rows           1" in out
    assert "records at risk       1 (33.33%)" in out


def test_parquet_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "d.parquet"
    pl.DataFrame({"age": [30, 30, 40, 40, 40], "sex": ["F", "F", "M", "M", "M"]}).write_parquet(
        path
    )
    report = measure_json(capsys, str(path), "--quasi", "age,sex", "--release-model", "non_public")
    # classes of 2 and 3: max 0.5 > 0.33 → strict average = max; average 2/5
    assert (report["equivalence_classes"], report["min_class_size"]) == (2, 2)
    assert report["average_risk"] == pytest.approx(0.4) and report["data_risk"] == 0.5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["measure", "{missing}", "--quasi", "a"], "file not found"),
        (["measure", "{empty}", "--quasi", "a"], "empty file"),
        (["measure", "{data}", "--quasi", "nope"], "unknown quasi-identifier column"),
        (["measure", "{data}", "--quasi", "a", "--sep", ";"], "bad separator"),
        (["measure", "{data}", "--quasi", "a", "--sep", "ab"], "bad separator"),
        (["measure", "{data}"], "required"),
        (["measure", "{data}", "--quasi", "a", "--release-model", "open"], "invalid choice"),
        (["measure", "{data}", "--quasi", "a", "--cap", "0.4"], "--cap"),
        (["measure", "{data}", "--quasi", "a", "--threshold", "2"], "(0, 1]"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    paths = {
        "missing": tmp_path / "none.csv",
        "empty": tmp_path / "empty.csv",
        "data": tmp_path / "data.csv",
    }
    code, out, err = run(capsys, *(a.format(**paths) for a in args))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("deid: error: ") and message in err


def test_registry_hook_adds_subcommands(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    module = type(sys)("fake_cli_plugin")

    def register(subparsers: Any) -> None:
        parser = subparsers.add_parser("hello")
        parser.add_argument("--name", default="world")
        parser.set_defaults(handler=lambda args: print(f"hello {args.name}") or 0)

    module.register = register  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_cli_plugin", module)
    monkeypatch.setattr(cli, "SUBCOMMAND_MODULES", ["fake_cli_plugin", "no_such_module_xyz"])
    monkeypatch.setattr(
        "importlib.util.find_spec", lambda name: None if "no_such" in name else True
    )
    assert run(capsys, "hello", "--name", "engine")[:2] == (0, "hello engine\n")
    assert isinstance(cli.build_parser(), argparse.ArgumentParser)


def test_module_entry_point(adult_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "apps.engine.cli",
            "measure",
            str(adult_path),
            "--quasi",
            "sex",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["equivalence_classes"] == 2
    bad = subprocess.run(
        [sys.executable, "-m", "apps.engine.cli", "measure", "/nonexistent.csv", "--quasi", "a"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert (
        bad.returncode == 2
        and bad.stderr.strip() == "deid: error: file not found: /nonexistent.csv"
    )


# --------------------------------------------------------------------------- population (#17)


def test_adult_population_usa_reference(
    capsys: pytest.CaptureFixture[str], adult_path: Path
) -> None:
    """The issue's reference: adult, all 9 columns, USA = ARX's preset 317,238,626."""
    quasi = ",".join(ADULT_COLUMNS)
    by_size = measure_json(capsys, str(adult_path), "--quasi", quasi, "--population", "317238626")
    by_region = measure_json(
        capsys, str(adult_path), "--quasi", quasi, "--population-region", "USA"
    )
    population = by_size["population"]
    assert population["size"] == 317_238_626
    assert population["sampling_fraction"] == pytest.approx(30_162 / 317_238_626, rel=1e-15)
    assert population["pitman"]["available"] is True
    assert population["pitman"]["fraction"] == pytest.approx(0.038896188531360315, rel=1e-6)
    assert population["pitman"]["uniques"] == pytest.approx(
        0.038896188531360315 * 317_238_626, rel=1e-6
    )
    assert population["zayatz"]["fraction"] == pytest.approx(0.2645647181504129, rel=1e-6)
    assert population["snb"] == {"available": False, "fraction": None, "uniques": None}
    assert population["dankar"]["model"] == "pitman"
    assert population["dankar"]["fraction"] == population["pitman"]["fraction"]
    assert population["region"] is None
    assert by_region["population"]["region"]["key"] == "usa"
    assert by_region["population"]["pitman"] == population["pitman"]
    attackers = by_size["attacker_models"]
    assert attackers["threshold"] == 0.2  # ARX's default without a threshold
    for model in ("prosecutor", "journalist"):
        assert attackers[model]["highest"] == 1.0
        assert attackers[model]["records_at_risk"] == pytest.approx(0.7781314236456468)  # ARX
        assert attackers[model]["success_rate"] == pytest.approx(19_502 / 30_162)
    assert attackers["marketer"] == {"success_rate": pytest.approx(19_502 / 30_162)}


def test_population_uses_the_data_risk_target_and_curve(
    capsys: pytest.CaptureFixture[str], adult_path: Path
) -> None:
    report = measure_json(
        capsys,
        str(adult_path),
        "--quasi",
        ",".join(ADULT_COLUMNS),
        "--threshold",
        "0.1",
        "--population",
        "301620",
        "--population-curve",
    )
    assert report["attacker_models"]["threshold"] == 0.1
    assert report["attacker_models"]["prosecutor"]["records_at_risk"] == pytest.approx(
        0.893806776738943  # ARX, threshold 0.1
    )
    # ARX's published expectation at f = 0.1 (TestRiskMetrics.testDecisionRule2)
    assert report["population"]["dankar"]["fraction"] == pytest.approx(
        0.27684993883653597, rel=1e-6
    )
    curve = report["population"]["curve"]
    assert [p["sampling_fraction"] for p in curve][:3] == [1e-7, 1e-6, 1e-5] and len(curve) == 15


def test_no_population_leaves_the_report_unchanged(
    capsys: pytest.CaptureFixture[str], adult_path: Path
) -> None:
    report = measure_json(capsys, str(adult_path), "--quasi", "sex,age")
    assert "population" not in report and "attacker_models" not in report


def test_population_text_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("sex,age\nF,30\nF,30\nM,40\n")
    code, out, _ = run(
        capsys, "measure", str(path), "--quasi", "sex,age", "--population-region", "yukon"
    )
    assert code == 0
    assert "population            40,232 (Yukon), sampling fraction" in out
    assert "Dankar's rule picks   " in out and "marketer risk         success rate 0.6667" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--population", "2"], "smaller than the 3 released rows"),
        (["--population", "0"], "at least 1"),
        (["--population", "1e6"], "invalid int value"),
        (["--population-region", "atlantis"], "unknown population region 'atlantis'"),
        (["--population", "10", "--population-region", "usa"], "not allowed with"),
    ],
)
def test_bad_population_arguments(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], message: str
) -> None:
    path = tmp_path / "d.csv"
    path.write_text("sex,age\nF,30\nF,30\nM,40\n")
    code, out, err = run(capsys, "measure", str(path), "--quasi", "sex,age", *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err
