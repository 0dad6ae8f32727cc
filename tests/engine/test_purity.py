"""apps/engine must run without Django, Celery or DRF (ARCHITECTURE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "apps" / "engine"
FORBIDDEN = ("django", "celery", "rest_framework", "drf_spectacular")


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            names.extend(
                a.value
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            )
    return names


def test_engine_imports_no_web_framework() -> None:
    files = sorted(ENGINE.rglob("*.py"))
    assert files, "apps/engine has no Python files"
    offending = [
        f"{path.relative_to(ENGINE)}: {name}"
        for path in files
        for name in imported_modules(path)
        if name.split(".")[0] in FORBIDDEN
    ]
    assert offending == []


def test_the_scanner_sees_imports(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import django.conf\nfrom celery import shared_task\nimport polars\n")
    assert imported_modules(sample) == ["django.conf", "celery", "polars"]


def test_importing_the_engine_loads_no_web_framework() -> None:
    import subprocess
    import sys

    modules = sorted(
        "apps.engine." + ".".join(p.relative_to(ENGINE).with_suffix("").parts)
        for p in ENGINE.rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py")
    )
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"bad = [m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r}]\n"
        "print(bad)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ENGINE.parents[1],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "[]"
