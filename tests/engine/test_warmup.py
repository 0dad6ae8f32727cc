"""`warmup` compiles the numba kernels into the on-disk cache at install, so that a new
process (a web or worker process after `make install`) loads them and compiles nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from apps.engine.cli import main

ROOT = Path(__file__).resolve().parents[2]

# In a fresh process: a search (and one judging sensitive attributes), then the kernels'
# numba statistics: how many specializations came from the cache, how many were compiled.
SEARCH_AND_COUNT = """
import json
from numba.core.registry import CPUDispatcher
from apps.engine.search.preload import kernel_modules, load_compiled_code, load_sensitive_code

load_compiled_code()
load_sensitive_code()
hits = misses = loaded = 0
for module in kernel_modules():
    for kernel in vars(module).values():
        if isinstance(kernel, CPUDispatcher):
            hits += sum(kernel.stats.cache_hits.values())
            misses += sum(kernel.stats.cache_misses.values())
            loaded += len(kernel.signatures)
print(json.dumps({"hits": hits, "misses": misses, "loaded": loaded}))
"""


def run(args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )


def test_after_warmup_a_new_process_compiles_nothing() -> None:
    # The cache the app uses (settings: var/numba); warm already after `make install`.
    cache = Path(os.environ["NUMBA_CACHE_DIR"])
    warm = run(["-m", "apps.engine", "warmup"], cache)
    assert warm.returncode == 0, warm.stderr
    assert "numba kernels compiled and cached in" in warm.stdout and str(cache) in warm.stdout
    counted = run(["-c", SEARCH_AND_COUNT], cache)
    assert counted.returncode == 0, counted.stderr
    stats = json.loads(counted.stdout.strip().splitlines()[-1])
    # Every specialization the process holds came from the cache; none was compiled.
    assert stats["misses"] == 0 and stats["hits"] == stats["loaded"] > 10, stats


def test_an_unwritable_cache_is_named(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(blocker / "numba"))
    assert main(["warmup"]) == 2
    error = capsys.readouterr().err
    assert f"numba's cache folder {blocker / 'numba'} (NUMBA_CACHE_DIR) is not writable" in error


def test_the_settings_put_the_cache_under_var(settings) -> None:  # type: ignore[no-untyped-def]
    if "NUMBA_CACHE_DIR" in os.environ and not os.environ["NUMBA_CACHE_DIR"].startswith(
        str(settings.VAR_DIR)
    ):
        return  # chosen by whoever runs the tests
    assert os.environ["NUMBA_CACHE_DIR"] == str(settings.VAR_DIR / "numba")


def test_the_marker_names_the_sources_compiled(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`warmup` ends with a marker of the sources it compiled; other sources are cold."""
    from apps.engine import cli_warmup

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cli_warmup, "warmup", lambda: _fake_warmup(cli_warmup))
    assert not cli_warmup.is_warm()
    assert main(["warmup", "--if-cold"]) == 0
    assert cli_warmup.is_warm() and cli_warmup.marker_path().parent == tmp_path
    monkeypatch.setattr(cli_warmup, "sources_digest", lambda: "other-sources")
    assert not cli_warmup.is_warm()


def _fake_warmup(cli_warmup) -> float:  # type: ignore[no-untyped-def]
    cli_warmup.marker_path().write_text("0\n")
    return 0.0


def test_a_worker_never_waits_for_the_compiler(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """On a cold cache a starting worker launches `deid warmup` in the background and
    loads nothing; on a warm one each worker process loads the compiled code in a thread
    of its own (a handler that blocked would hold the process's start)."""
    from apps.engine import cli_warmup
    from apps.jobs import isolation
    from deidweb import celery

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    started: list[list[str]] = []
    monkeypatch.setattr(celery.subprocess, "Popen", lambda cmd, **kw: started.append(cmd))
    threads: list[str] = []
    monkeypatch.setattr(isolation, "_PRELOAD", [])  # (the first job waits for this loading)
    monkeypatch.setattr(
        isolation.threading,
        "Thread",
        lambda target, name, daemon: type("T", (), {"start": lambda self: threads.append(name)})(),
    )
    celery.compile_kernels_in_the_background()
    celery.load_compiled_code_at_start()
    assert started == [[sys.executable, "-m", "apps.engine", "warmup"]] and threads == []
    cli_warmup.marker_path().write_text("0\n")  # warm now
    celery.compile_kernels_in_the_background()
    celery.load_compiled_code_at_start()
    assert len(started) == 1 and threads == ["load-compiled-code"]


def test_new_sources_start_from_an_empty_cache(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """numba checks a cached kernel against its own file only, so after any source changed a
    warm-up drops this checkout's compiled code (stale callees inside cached callers) and
    leaves another checkout's alone; a warm cache is left as it is."""
    import hashlib

    from apps.engine import cli_warmup

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    kernels = Path(cli_warmup.__file__).resolve().parent / "search" / "kernels"
    ours = tmp_path / f"kernels_{hashlib.sha1(str(kernels).encode()).hexdigest()}"
    theirs = (
        tmp_path / f"kernels_{hashlib.sha1(b'/elsewhere/apps/engine/search/kernels').hexdigest()}"
    )
    for folder in (ours, theirs):
        folder.mkdir()
        (folder / "solve.search-1.py311.nbi").write_text("index")
        (folder / "solve.search-1.py311.1.nbc").write_text("code")
    assert ours in cli_warmup.cache_folders() and theirs not in cli_warmup.cache_folders()
    compiled: list[int] = []
    monkeypatch.setattr(cli_warmup, "load_compiled_code", lambda: compiled.append(1))
    for name in ("load_sensitive_code", "load_longitudinal_code", "load_person_attack_code"):
        monkeypatch.setattr(cli_warmup, name, lambda: None)
    (tmp_path / ".compiled-older-sources").write_text("1\n")

    assert main(["warmup", "--if-cold"]) == 0
    assert compiled == [1] and cli_warmup.is_warm()
    assert sorted(p.name for p in ours.iterdir()) == []
    assert len(list(theirs.iterdir())) == 2
    assert not (tmp_path / ".compiled-older-sources").exists()

    # warm: a second warm-up keeps what the first one compiled
    (ours / "solve.search-1.py311.nbi").write_text("index")
    assert main(["warmup"]) == 0
    assert [p.name for p in ours.iterdir()] == ["solve.search-1.py311.nbi"]
