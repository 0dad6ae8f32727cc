"""The layers of docs/architecture.md hold: import-linter's contracts (pyproject.toml) are
kept, and every hook a lower layer offers has the subscriber the higher layer connects.

The contracts are the same ones ``make lint`` runs; here they run in CI's ``make test`` too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from apps.core.hooks import Hook, Provided

ROOT = Path(__file__).resolve().parent.parent


def test_the_layers_and_the_engine_rule_are_kept() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(lint_imports), "--no-cache"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout + done.stderr
    assert "Layers, top down KEPT" in out, out
    assert "The engine imports no Django and no app KEPT" in out, out
    assert "Contracts: 2 kept, 0 broken." in out, out
    assert done.returncode == 0, out


def test_no_import_is_ignored_by_the_contracts() -> None:
    """Zero exceptions: the contracts list no ``ignore_imports``."""
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[tool.importlinter]", 1)[1].split("\n[tool.mypy]", 1)[0]
    assert "ignore_imports" not in section
    assert "unmatched_ignore_imports_alerting" not in section


def test_a_hook_calls_its_subscribers_in_order_once_each() -> None:
    calls: list[tuple[str, int]] = []

    @Hook.declare
    def happened(*, n: int) -> None:
        """Something happened n times."""

    def first(*, n: int) -> None:
        calls.append(("first", n))

    def second(*, n: int) -> None:
        calls.append(("second", n))

    happened.subscribe(first)
    happened.subscribe(second)
    happened.subscribe(first)  # a ready() run twice subscribes once
    happened.send(n=3)
    assert calls == [("first", 3), ("second", 3)]
    assert happened.name == "tests.test_layers.happened"
    assert happened.__doc__ == "Something happened n times."


def test_a_subscriber_that_fails_fails_the_sender() -> None:
    @Hook.declare
    def happened() -> None: ...

    def broken() -> None:
        raise ValueError("no")

    happened.subscribe(broken)
    with pytest.raises(ValueError, match="no"):
        happened.send()


def test_a_provided_function_is_called_and_is_required() -> None:
    @Provided.declare
    def double(x: int) -> int: ...

    with pytest.raises(ImproperlyConfigured, match="Nothing provides tests.test_layers.double"):
        double(2)
    double.provide(lambda x: 2 * x)
    assert double(21) == 42


def test_every_hook_is_wired_by_the_app_above_it() -> None:
    """After Django's start (AppConfig.ready), each hook has its subscriber or provider."""
    from apps.assessments import hooks as assessments_hooks
    from apps.assessments.services import assessments_roles_changed
    from apps.audit.services import audit_record
    from apps.classification import hooks as classification_hooks
    from apps.classification.services import (
        identifier_values_shown,
        variables_create_from_profile,
    )
    from apps.core import recording
    from apps.datasets import hooks as datasets_hooks
    from apps.jobs import services as jobs_services
    from apps.jobs.tasks import run_job_send
    from apps.reports.jobs import report_again, report_request
    from apps.reviews import hooks as reviews_hooks
    from apps.reviews.release import release_file_open
    from apps.reviews.services import submission_blockers

    assert recording.audit_record.function is audit_record
    assert jobs_services.job_message_send.function is run_job_send
    assert datasets_hooks.profile_stored.subscribers == (variables_create_from_profile,)
    assert datasets_hooks.raw_values_shown.subscribers == (identifier_values_shown,)
    assert classification_hooks.roles_changed.subscribers == (assessments_roles_changed,)
    assert assessments_hooks.submission_blockers.function is submission_blockers
    assert assessments_hooks.release_file_open.function is release_file_open
    assert reviews_hooks.decision_final.subscribers == (report_request,)
    assert reviews_hooks.report_prepare_again.function is report_again


def test_no_module_imports_itself_through_others() -> None:
    """No import cycle between modules, counting the imports inside functions too (issue 24
    found two: jobs.services ↔ jobs.tasks, assessments.deidentify ↔ assessments.precheck)."""
    import grimp

    graph = grimp.build_graph("apps", "deidweb", include_external_packages=False)
    cycles = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported != module and graph.chain_exists(importer=imported, imported=module):
                chain = graph.find_shortest_chain(importer=imported, imported=module)
                cycles.append(" → ".join([module, *(chain or ())]))
    assert cycles == []
