"""`warmup` compiles the numba kernels into the on-disk cache at install, so that a new
process (a web or worker process after `make install`) loads them and compiles nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from apps.engine.cli import main
from apps.engine.numba_cache import cache_root, sources_digest

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
    folder = blocker / "numba" / f"sources-{sources_digest()}"
    assert f"numba's cache folder {folder} (NUMBA_CACHE_DIR) is not writable" in error


def test_the_settings_put_the_cache_under_var(settings) -> None:  # type: ignore[no-untyped-def]
    if "NUMBA_CACHE_DIR" in os.environ and not os.environ["NUMBA_CACHE_DIR"].startswith(
        str(settings.VAR_DIR)
    ):
        return  # chosen by whoever runs the tests
    # The settings name the root; the engine points numba at its sources' folder under it.
    assert cache_root() == settings.VAR_DIR / "numba"
    assert os.environ["NUMBA_CACHE_DIR"] == str(
        settings.VAR_DIR / "numba" / f"sources-{sources_digest()}"
    )


def test_the_marker_names_the_sources_compiled(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`warmup` ends with a marker of the sources it compiled; other sources are cold."""
    from apps.engine import cli_warmup

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cli_warmup, "warmup", lambda: _fake_warmup(cli_warmup))
    assert not cli_warmup.is_warm()
    assert main(["warmup", "--if-cold"]) == 0
    assert cli_warmup.is_warm()
    assert cli_warmup.marker_path().parent == tmp_path / f"sources-{sources_digest()}"
    monkeypatch.setattr(cli_warmup, "sources_digest", lambda: "other-sources")
    assert not cli_warmup.is_warm()


def _fake_warmup(cli_warmup) -> float:  # type: ignore[no-untyped-def]
    cli_warmup.marker_path().parent.mkdir(exist_ok=True)
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
    cli_warmup.marker_path().parent.mkdir()
    cli_warmup.marker_path().write_text("0\n")  # warm now
    celery.compile_kernels_in_the_background()
    celery.load_compiled_code_at_start()
    assert len(started) == 1 and threads == ["load-compiled-code"]


def _stub_loaders(cli_warmup, monkeypatch) -> list[int]:  # type: ignore[no-untyped-def]
    """The warm-up's compilation replaced by a count of its calls."""
    compiled: list[int] = []
    monkeypatch.setattr(cli_warmup, "load_compiled_code", lambda: compiled.append(1))
    for name in ("load_sensitive_code", "load_longitudinal_code", "load_person_attack_code"):
        monkeypatch.setattr(cli_warmup, name, lambda: None)
    return compiled


# A process of the current sources that loads compiled code: it prints the folder numba
# loads a search kernel from, then lives (holding its folder) until its input closes.
WHERE_NUMBA_LOADS = """
import sys
from numba.core.registry import CPUDispatcher
from apps.engine.search.preload import kernel_modules

kernels = [k for m in kernel_modules() for k in vars(m).values() if isinstance(k, CPUDispatcher)]
print(kernels[0]._cache.cache_path, flush=True)
sys.stdin.read()
"""


def test_a_warm_up_for_new_sources_leaves_a_running_process_its_compiled_code(  # type: ignore[no-untyped-def]
    tmp_path: Path, monkeypatch
) -> None:
    """A worker starting on new sources warms up while jobs on the sources before are
    running: numba of those jobs still finds the files it loads (it used to find them
    deleted: the warm-up emptied the one cache both used). Once no process uses the old
    sources' folder, a warm-up removes it."""
    from apps.engine import cli_warmup

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    running = subprocess.Popen(  # noqa: S603 (this interpreter, a fixed script)
        [sys.executable, "-c", WHERE_NUMBA_LOADS],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert running.stdout is not None and running.stdin is not None
        loads_from = Path(running.stdout.readline().strip())
        assert tmp_path in loads_from.parents
        compiled_code = [loads_from / "solve.search-1.py311.nbi", loads_from / "solve.1.nbc"]
        for path in compiled_code:
            path.write_text("compiled")

        monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
        monkeypatch.setattr(cli_warmup, "sources_digest", lambda: "new-sources")
        compiled = _stub_loaders(cli_warmup, monkeypatch)
        assert main(["warmup", "--if-cold"]) == 0
        assert compiled == [1] and cli_warmup.is_warm()
        assert all(path.exists() for path in compiled_code)
        assert cli_warmup.marker_path().parent == tmp_path / "sources-new-sources"
    finally:
        running.communicate(input="", timeout=60)
    assert running.returncode == 0

    assert main(["warmup"]) == 0  # nobody uses the old sources' folder now
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sources-new-sources"]


def test_a_folder_in_use_is_kept_and_an_unused_one_removed(tmp_path: Path) -> None:
    """A folder is removed only when no process holds its lock."""
    from apps.engine import numba_cache

    used, unused, current = (tmp_path / f"sources-{n}" for n in ("used", "unused", "current"))
    for folder in (used, unused, current):
        folder.mkdir()
        (folder / "kernel.nbi").write_text("index")
    numba_cache.hold(used)
    try:
        removed = numba_cache.remove_unused_folders(tmp_path, keep=current)
        assert removed == [unused]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["sources-current", "sources-used"]
        assert (used / "kernel.nbi").read_text() == "index"
    finally:
        numba_cache._HELD.pop().close()
    assert numba_cache.remove_unused_folders(tmp_path, keep=current) == [used]


def test_a_child_process_picks_its_own_sources_folder(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A process started by one that chose its folder inherits NUMBA_CACHE_DIR naming that
    folder: its root is the folder's parent, not a folder nested in it."""
    from apps.engine.numba_cache import cache_root

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "sources-0123456789abcdef"))
    assert cache_root() == tmp_path
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert cache_root() == tmp_path


def test_without_a_cache_dir_new_sources_start_from_an_empty_cache(  # type: ignore[no-untyped-def]
    tmp_path: Path, monkeypatch
) -> None:
    """Beside the sources (no NUMBA_CACHE_DIR) there is one cache per source folder, so a
    warm-up on new sources empties it: numba checks a cached kernel against its own file
    only (stale callees inside cached callers)."""
    from apps.engine import cli_warmup

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    cleared: list[int] = []

    def clear_cache() -> int:
        cleared.append(1)
        return 0

    monkeypatch.setattr(cli_warmup, "clear_cache", clear_cache)
    monkeypatch.setattr(cli_warmup, "marker_path", lambda: tmp_path / ".compiled-new")
    compiled = _stub_loaders(cli_warmup, monkeypatch)
    cli_warmup.warmup()
    assert cleared == [1] and compiled == [1]
    assert (tmp_path / ".compiled-new").exists()
    cli_warmup.warmup()  # warm now: nothing is cleared
    assert cleared == [1] and compiled == [1, 1]
