"""Step 7's search job with nothing to suppress takes the compiled search (issue #26): in
slices that report progress to the job, with the result the Python search stores."""

from typing import Any

import pytest

from apps.assessments import deidentify
from apps.classification.services import variables_accept_suggestions
from apps.engine.search import compiled_search, optimal
from apps.jobs.context import JobContext
from tests.assessments.conftest import _run, through_risk, trade_off_people, uploaded_register


@pytest.fixture
def register(custodian, analyst):  # type: ignore[no-untyped-def]
    """400 people (``trade_off_people``), k = 10, nothing may be suppressed."""
    dataset = uploaded_register(custodian, analyst, trade_off_people())
    variables_accept_suggestions(dataset=dataset, user=analyst)
    assessment = through_risk(custodian, analyst, dataset)
    deidentify.deid_config_set(
        assessment=assessment, masking={}, suppression_limit=0.0, metric="loss", max_levels={}
    )
    return assessment


def _search(assessment: Any, analyst: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    job = _run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    stored = dict(assessment.search_result)
    for timed in ("seconds", "timing"):
        stored.pop(timed)
    return stored, job.result


def test_a_search_without_suppression_runs_compiled_and_reports(register, analyst, monkeypatch):  # type: ignore[no-untyped-def]
    compiled: list[int] = []
    searched = compiled_search.find_optimum

    def spy(*args: Any, **kw: Any) -> Any:
        assert kw["progress"] is not None  # (the job's listener)
        found = searched(*args, **kw)
        compiled.append(found.evaluated)
        return found

    reports: list[str] = []
    progress = JobContext.progress

    def record(self: JobContext, percent: float, message: str = "", **kw: Any) -> None:
        reports.append(message)
        progress(self, percent, message, **kw)

    monkeypatch.setattr(compiled_search, "find_optimum", spy)
    monkeypatch.setattr(JobContext, "progress", record)
    # slices of one evaluation: a report after each (the job writes one a second)
    monkeypatch.setattr(compiled_search, "FIRST_SLICE", 1)
    monkeypatch.setattr(compiled_search, "_next_slice", lambda budget, evaluated, seconds: 1)
    stored, result = _search(register, analyst)
    assert compiled == [stored["nodes_evaluated"]]
    assert stored["optimal"] is True and stored["outcome"] == "optimal"
    assert stored["solution"]["suppressed_rows"] == 0
    assert result["found"] is True and result["levels"] == stored["levels"]
    heard = [m for m in reports if "generalizations evaluated" in m]
    assert len(heard) >= 2  # a slice's report, then the end's
    evaluated, total = stored["nodes_evaluated"], stored["nodes_total"]
    loss = stored["solution"]["information_loss"]
    assert heard[-1] == (
        f"{evaluated:,} of {total:,} generalizations evaluated; "
        f"best information loss so far {loss:.4f}"
    )

    # The Python search (the reference) stores the same result.
    monkeypatch.setattr(optimal, "COMPILED_ZERO_LIMIT", False)
    reference, _ = _search(register, analyst)
    assert compiled == [stored["nodes_evaluated"]]  # (not called again)
    assert reference == stored
