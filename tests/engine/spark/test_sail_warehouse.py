"""A managed table written on the tests' Sail server goes under the server's own temporary
folder, never into the directory the tests run from (a ``spark-warehouse`` folder once
got committed from the checkout's root)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark


def test_a_managed_table_on_sail_is_written_outside_the_working_directory(
    sail_engine: Any,
) -> None:
    session = sail_engine.session
    before = set(Path.cwd().iterdir())
    session.range(3).write.saveAsTable("warehouse_probe")
    try:
        rows = session.sql("DESCRIBE TABLE EXTENDED warehouse_probe").collect()
        location = next(r.data_type for r in rows if r.col_name == "Location")
        assert session.table("warehouse_probe").count() == 3
    finally:
        session.sql("DROP TABLE IF EXISTS warehouse_probe")
    assert set(Path.cwd().iterdir()) == before
    assert not (Path.cwd() / "spark-warehouse").exists()
    # relative to the server's working directory: a folder of its own under the temp dir
    server_dirs = list(Path(tempfile.gettempdir()).glob("deidweb-sail-*"))
    assert any((d / location).exists() for d in server_dirs), location
