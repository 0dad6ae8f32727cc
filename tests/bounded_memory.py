"""Peak memory of code run in a fresh Python process, which is stopped before it can take the
machine down.

A file built to exhaust memory (a 1.5 KB workbook whose reader allocates 5 GB) must not
take the test run down with it when the guard is missing: the child runs under a watch that
kills it as soon as its resident memory passes the bound, and the test then fails on that.
When it finishes, its own high-water mark (VmHWM) is the figure reported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MIB = 1024**2

# Appended to the code: the child's answer (a JSON value it stored in `result`) and its peak.
_EPILOGUE = """
import json as _json
for _line in open("/proc/self/status"):
    if _line.startswith("VmHWM:"):
        _peak = int(_line.split()[1]) * 1024
print("\\n@@result " + _json.dumps({"result": result, "peak": _peak}))
"""


@dataclass(frozen=True)
class Measured:
    result: Any  # what the child stored in `result` (None if it was stopped)
    peak: int  # bytes: the child's VmHWM, or the most it was seen to hold if stopped
    stopped: str  # "" when it ran to the end; else why not ("memory", "time", a crash)
    output: str

    def check(self, bound: int) -> Any:
        """The child's result, after asserting it ran to the end within `bound` bytes."""
        assert not self.stopped, (
            f"stopped ({self.stopped}) at {self.peak // MIB} MiB; the bound is "
            f"{bound // MIB} MiB\n" + self.output[-3000:]
        )
        assert self.peak < bound, f"peak {self.peak // MIB} MiB ≥ {bound // MIB} MiB"
        return self.result


def _resident(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def run_bounded(
    code: str, *, bound: int, timeout: float = 600, env: dict[str, str] | None = None
) -> Measured:
    """Run `code` (which sets a JSON-ready `result`) in a new interpreter from the project
    root; kill it if its resident memory passes `bound` bytes."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    process = subprocess.Popen(
        [sys.executable, "-c", code + _EPILOGUE],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen, stopped = 0, ""
    chunks: list[str] = []
    reader = threading.Thread(target=lambda: chunks.append(process.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    deadline = time.monotonic() + timeout
    while process.poll() is None:
        seen = max(seen, _resident(process.pid))
        if seen > bound or time.monotonic() > deadline:
            stopped = "memory" if seen > bound else "time"
            process.kill()
            break
        time.sleep(0.01)
    process.wait()
    reader.join()
    output = "".join(chunks)
    marker = output.rfind("@@result ")
    if marker < 0 and not stopped:
        stopped = f"ended without a result, exit status {process.returncode}"
    if stopped:
        return Measured(result=None, peak=seen, stopped=stopped, output=output)
    answer = json.loads(output[marker + len("@@result ") :].splitlines()[0])
    return Measured(result=answer["result"], peak=answer["peak"], stopped="", output=output)
