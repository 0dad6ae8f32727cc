"""No plaintext in the system temp folder (issue 23, item 12): temporary files with data live
in a private folder, each process in a folder of its own, and what a killed process left
there is removed when a web or worker process starts.

Every case runs real processes: a gunicorn receiving an upload, a process copying a file
from a real S3 server (SeaweedFS), each killed with SIGKILL midway as a restart or a crash
would; the system temp folder of each is a folder of the test (TMPDIR), to see what lands
there.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from base64 import b64encode
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.seaweedfs import S3Server, seaweedfs_server

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).parent / "gunicorn"
# What the files hold: found anywhere it should not be, it is a leak.
MARKER = b"Patient Hel\xc3\xa8ne Tremblay, health number 1234-567-890"


def holding_marker(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and MARKER in p.read_bytes())


def environment(tmp_path: Path, **more: str) -> dict[str, str]:
    """A deployment of its own: var/ (and so the private folder var/tmp) and a system temp
    folder in the test's folder."""
    (tmp_path / "var").mkdir(mode=0o700, exist_ok=True)
    (tmp_path / "system-tmp").mkdir(exist_ok=True)
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "deidweb.settings.local",
        "DEIDWEB_VAR_DIR": str(tmp_path / "var"),
        "DEIDWEB_MASTER_KEY": b64encode(bytes(range(32))).decode(),
        "TMPDIR": str(tmp_path / "system-tmp"),
        "PYTHONPATH": str(ROOT),
        **more,
    }


def run_django(
    code: str, env: dict[str, str], **options: object
) -> subprocess.CompletedProcess[str]:
    """`code` in a new process once Django has started (as a web or worker process does)."""
    return subprocess.run(
        [sys.executable, "-c", "import django\ndjango.setup()\n" + code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        **options,  # type: ignore[arg-type]
    )


def folders(private: Path) -> set[str]:
    return {p.name for p in private.iterdir() if p.is_dir()} if private.exists() else set()


# --------------------------------------------------------------------------- start-up


def test_start_up_removes_what_ended_processes_left_and_spares_running_ones(
    tmp_path: Path,
) -> None:
    env = environment(tmp_path)
    private = tmp_path / "var" / "tmp"
    write = (
        "import os, signal, tempfile\n"
        "with tempfile.NamedTemporaryFile(delete=False) as f:\n"
        f"    f.write({MARKER!r})\n"
        "print(tempfile.gettempdir(), flush=True)\n"
    )
    # A process still running (it waits for its standard input to close).
    running = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import django, sys\ndjango.setup()\n" + write + "sys.stdin.read()\n",
        ],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert running.stdout is not None and running.stdin is not None
    alive = Path(running.stdout.readline().strip())
    # A process killed: its folder and the file in it stay behind.
    killed = run_django(write + "os.kill(os.getpid(), signal.SIGKILL)\n", env)
    assert killed.returncode == -signal.SIGKILL
    dead = Path(killed.stdout.strip())
    assert dead.parent == private and holding_marker(dead)
    (private / "stray.upload").write_bytes(MARKER)  # left by some older run
    assert folders(private) == {dead.name, alive.name}

    started = run_django("import tempfile; print(tempfile.gettempdir())", env)
    assert started.returncode == 0, started.stderr
    assert folders(private) == {alive.name}  # the new process's own is gone with it
    assert not (private / "stray.upload").exists()
    assert holding_marker(private) == holding_marker(alive) != []
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert stat.S_IMODE(alive.stat().st_mode) == 0o700

    running.stdin.close()  # ends normally: removes its own folder
    assert running.wait(60) == 0
    assert list(private.iterdir()) == []
    assert list((tmp_path / "system-tmp").iterdir()) == []


def test_the_private_folder_is_closed_to_other_accounts_even_if_it_was_not(
    tmp_path: Path,
) -> None:
    private = tmp_path / "var" / "tmp"
    private.mkdir(parents=True, mode=0o777)
    private.chmod(0o777)
    env = environment(tmp_path)
    started = run_django("import tempfile; print(tempfile.gettempdir())", env)
    assert started.returncode == 0, started.stderr
    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert Path(started.stdout.strip()).parent == private


# --------------------------------------------------------------------------- an upload


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_gunicorn(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [str(GUNICORN), "-c", "deidweb/gunicorn.conf.py", "deidweb.wsgi:application",
         "--bind", f"127.0.0.1:{port}"],
        cwd=ROOT, env={**env, "WEB_CONCURRENCY": "1", "WEB_THREADS": "2"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/health/")
            if connection.getresponse().status == 200:
                return process
        except OSError:
            time.sleep(0.3)
    process.kill()
    pytest.fail("gunicorn did not start")


def kill_group(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)


def test_a_partial_upload_stays_in_the_private_folder_and_a_restart_removes_it(
    tmp_path: Path,
) -> None:
    """Issue 23: 81 MB of a partial upload were left in the system temp folder after a web
    restart. Here a client sends 6 MB of a 40 MB upload, the web server is killed (as a
    restart past its grace period does), then started again."""
    env = environment(tmp_path)
    private = tmp_path / "var" / "tmp"
    port = _free_port()
    server = start_gunicorn(env, port)
    try:
        # The CSRF check reads the form, and so receives the file, of any client that sends
        # a CSRF cookie (whatever its value) and the same token in the form.
        token = "a" * 32
        boundary = "deidwebboundary"
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n'
            f'\r\n{token}\r\n--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            'filename="register.csv"\r\nContent-Type: text/csv\r\n\r\n'
        ).encode()
        upload = socket.create_connection(("127.0.0.1", port))
        upload.sendall(
            b"POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + f"Cookie: csrftoken={token}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
            f"Content-Length: {40 * 1024**2}\r\n\r\n".encode()
            + head
        )
        block = (MARKER + b"\n") * 1000
        for _ in range(6 * 1024**2 // len(block)):
            upload.sendall(block)
        received: list[Path] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not received:
            # wherever the server keeps it
            received = [p for p in holding_marker(tmp_path) if p.stat().st_size > 4 * 1024**2]
            time.sleep(0.2)
        assert received, "the upload was never received"
        kill_group(server)
        upload.close()
    finally:
        if server.poll() is None:
            kill_group(server)
    assert holding_marker(tmp_path / "system-tmp") == []
    # left behind by the killed worker, in its own private folder
    assert received[0].exists() and received[0].parent.parent == private

    restarted = start_gunicorn(env, port)
    try:
        assert not received[0].exists()
        assert holding_marker(private) == []
        assert len(folders(private)) == 1  # the new worker's own
    finally:
        kill_group(restarted)


# --------------------------------------------------------------------------- object storage


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with seaweedfs_server() as server:
        yield server


def test_a_copy_from_object_storage_interrupted_by_a_kill_stays_private_until_start_up(
    tmp_path: Path, s3: S3Server
) -> None:
    """Issue 23: a temporary copy of an S3 object was left in the system temp folder after
    a worker was killed. The worker here is killed while it holds the copy (both the
    storage library's download and the local copy the engine reads)."""
    bucket = s3.create_bucket()
    s3.client().put_object(Bucket=bucket, Key="organizations/x/data.csv", Body=MARKER * 50_000)
    env = environment(tmp_path, **s3.worker_env(bucket))
    private = tmp_path / "var" / "tmp"
    killed = run_django(
        "import os, signal\n"
        "from apps.datasets.storage import local_path\n"
        "with local_path('organizations/x/data.csv') as path:\n"
        f"    assert {MARKER!r} in path.read_bytes()\n"
        "    print(path, flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n",
        env,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    copy = Path(killed.stdout.strip())
    assert copy.exists() and private in copy.parents
    assert holding_marker(tmp_path / "system-tmp") == []

    started = run_django("pass", env)  # a worker starting
    assert started.returncode == 0, started.stderr
    assert not copy.exists()
    assert holding_marker(private) == []


def test_a_forked_process_killed_leaves_nothing_once_the_next_one_starts(tmp_path: Path) -> None:
    """Celery's prefork pool runs jobs in processes forked from the worker's main process,
    which made the private folder; one of them killed (SIGKILL: by hand, by the kernel)
    left its temporary files in the main process's folder — locked as long as the main
    process lives, so no start-up removed them, for as long as the worker ran. A forked
    process gets a folder of its own, and the next process forked sweeps what a killed
    one left."""
    env = environment(tmp_path)
    private = tmp_path / "var" / "tmp"
    script = (
        "import os, signal, tempfile, time\n"
        "def pool_process(work):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        try:\n"
        "            work()\n"
        "        finally:\n"
        "            os._exit(0)\n"
        "    return os.waitpid(pid, 0)[1]\n"
        "read, write = os.pipe()\n"
        "def killed():\n"
        "    with tempfile.NamedTemporaryFile(delete=False) as copy:\n"
        f"        copy.write({MARKER!r})\n"
        "    os.write(write, copy.name.encode())\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "status = pool_process(killed)\n"
        "left = os.read(read, 4096).decode()\n"
        "print(left, os.path.exists(left), flush=True)\n"
        "pool_process(lambda: None)  # the pool process that replaces it\n"
        "print(os.path.exists(left), flush=True)\n"
    )
    finished = run_django(script, env)
    assert finished.returncode == 0, finished.stderr
    first, second = finished.stdout.splitlines()
    path, existed = first.rsplit(" ", 1)
    assert existed == "True" and private in Path(path).parents
    assert second == "False", "the killed process's copy outlived the next process's start"
    assert holding_marker(private) == []
