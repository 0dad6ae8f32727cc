"""The layers of docs/architecture.md hold: import-linter's contracts (pyproject.toml) are
kept, and every hook a lower layer offers has the subscriber the higher layer connects.

The contracts are the same ones ``make lint`` runs; here they run in CI's ``make test`` too.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from apps.core.hooks import Hook, Provided

ROOT = Path(__file__).resolve().parent.parent
APPS = ROOT / "apps"
MAX_LINES = 600


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
    from apps.jobs import queueing as jobs_queueing
    from apps.jobs.tasks import run_job_send
    from apps.reports.jobs import report_again, report_request
    from apps.reviews import hooks as reviews_hooks
    from apps.reviews.release import release_file_open
    from apps.reviews.submissions import submission_blockers

    assert recording.audit_record.function is audit_record
    assert jobs_queueing.job_message_send.function is run_job_send
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


def _long_files_named() -> dict[str, str]:
    """The files docs/architecture.md allows over MAX_LINES, each with its reason: the lines
    "- `apps/….py`: reason" of its section "Files over 600 lines"."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Files over 600 lines", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^- `(apps/[\w/]+\.py)`:\s*(\S.*)$", section, flags=re.MULTILINE))


def test_no_python_file_in_apps_is_over_600_lines_without_a_reason() -> None:
    """Rooms by concept (issue 24): a module over 600 lines is named, with why, in
    docs/architecture.md; one named there that has shrunk is struck off."""
    named = _long_files_named()
    lines = {
        path.relative_to(ROOT).as_posix(): len(path.read_text().splitlines())
        for path in APPS.rglob("*.py")
    }
    too_long = {path: n for path, n in lines.items() if n > MAX_LINES and path not in named}
    assert too_long == {}
    stale = {path for path in named if lines.get(path, 0) <= MAX_LINES}
    assert stale == set()


def _imports_of_apps_inside_functions(tree: ast.Module) -> list[ast.stmt]:
    found: list[ast.stmt] = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            if any(name == "apps" or name.startswith("apps.") for name in names):
                found.append(node)
    return found


def _has_lazy_reason(node: ast.stmt, lines: list[str], import_lines: set[int]) -> bool:
    """A ``# lazy: <reason>`` comment on the import's line, or on the line above it or above
    the run of imports it belongs to."""
    if re.search(r"# lazy: \S", lines[node.lineno - 1]):
        return True
    above = node.lineno - 1
    while above in import_lines:
        above -= 1
    return above >= 1 and re.match(r"\s*# lazy: \S", lines[above - 1]) is not None


def test_every_import_of_apps_inside_a_function_says_why() -> None:
    """Function-local imports only for deliberate lazy imports (a heavy or optional engine
    part, AppConfig.ready(), a migration), each with a one-line ``# lazy:`` reason; any other
    belongs at the top of its module, or behind a hook when it would point upwards."""
    unexplained = []
    for path in sorted(APPS.rglob("*.py")):
        text = path.read_text()
        tree = ast.parse(text)
        import_lines = {
            n
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)
        }
        lines = text.splitlines()
        for node in _imports_of_apps_inside_functions(tree):
            if not _has_lazy_reason(node, lines, import_lines):
                where = path.relative_to(ROOT).as_posix()
                unexplained.append(f"{where}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert unexplained == []


def test_the_lazy_import_rule_sees_what_it_must() -> None:
    """The checker on a made-up module: a top-level import and one with its reason pass; a
    function-local one without a reason, and one whose reason sits above a blank line, fail."""
    source = (
        "from apps.core import hooks\n"
        "def ready():\n"
        "    # lazy: the models are loaded only now\n"
        "    from apps.jobs import queueing\n"
        "    from apps.jobs import tasks\n"
        "def handler():\n"
        "    from apps.engine.cli import main  # lazy: the CLI loads polars\n"
        "def bare():\n"
        "    import apps.reports.jobs\n"
        "def far():\n"
        "    # lazy: too far above\n"
        "\n"
        "    from apps.audit.services import audit_record\n"
    )
    tree = ast.parse(source)
    lines = source.splitlines()
    import_lines = {
        node.lineno for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
    }
    verdicts = {
        node.lineno: _has_lazy_reason(node, lines, import_lines)
        for node in _imports_of_apps_inside_functions(tree)
    }
    assert verdicts == {4: True, 5: True, 7: True, 9: False, 13: False}
