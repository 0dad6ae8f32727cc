"""Fixtures for the Django-free data set modules (ingest, profiling, demo)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from apps.datasets.profiling import DatasetProfile, profile_parquet

WriteFile = Callable[[str, bytes | str], Path]


@pytest.fixture
def write_file(tmp_path: Path) -> WriteFile:
    """write_file("name.csv", content) → path; text is written as UTF-8."""

    def write(name: str, content: bytes | str) -> Path:
        path = tmp_path / "in" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return path

    return write


@pytest.fixture
def dest(tmp_path: Path) -> Path:
    """Where converted Parquet goes; its folder starts empty so leftovers can be checked."""
    folder = tmp_path / "out"
    folder.mkdir()
    return folder / "data.parquet"


@pytest.fixture
def profile_of(tmp_path: Path) -> Callable[[pl.DataFrame], DatasetProfile]:
    """profile_of(frame): write the frame as Parquet and profile it."""
    counter = iter(range(1_000_000))

    def profile(frame: pl.DataFrame) -> DatasetProfile:
        path = tmp_path / f"frame-{next(counter)}.parquet"
        frame.write_parquet(path)
        return profile_parquet(path)

    return profile
