"""Child processes for the crash and storm tests: each runs one robodata call in a process of
its own (Lance is not fork-safe, so never a fork of the test process) and says when it is about
to start; given ``kill_at`` it SIGKILLs itself before, during or after one of its storage steps
(lease write, data file write, commit, merge, lease release, and any function named in
``hooks``), the points where a crash leaves different things behind; given ``kill_on_delete`` it
SIGKILLs itself the moment a file of that folder is deleted (a point inside Lance's native code).

Each child is forked from a zygote: one interpreter per test process that imports robodata,
Lance and PyArrow once and never opens a dataset (no Lance runtime exists to be forked, as with
the DataLoader workers' fork server, ``robodata.torch._forkserver_preload``). A child starts in
milliseconds instead of re-importing them (about a CPU-second each), runs with the test
process's current environment, and is a process of its own: its own pid, killed alone.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from robodata.integrity._gop_leases import LEASE_PREFIX, STAGING_DIR
from robodata.storage import fsspec_filesystem, join_uri

REPO_ROOT = Path(__file__).resolve().parents[1]

# argv: operation, dataset root, JSON storage options, JSON arguments. Prints "ready" once
# robodata is imported (the kill delay counts from there), then "done" (an ingest: "result" and
# its IngestResult as JSON first) or the error.
CHILD = r"""
import json, sys, traceback
from datetime import timedelta
import robodata
from robodata.edits._upkeep import upkeep_dataset
op, root, options, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]) or None, json.loads(sys.argv[4])
import os, signal, threading
def die():
    os.kill(os.getpid(), signal.SIGKILL)
if args.get("kill_on_delete"):
    # kill -9 this process the moment a file of the folder kill_on_delete (under the root) is
    # deleted (inotify): a kill inside a native call (Lance's cleanup), at a point of its own.
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    watch_fd = libc.inotify_init()
    assert libc.inotify_add_watch(watch_fd, os.path.join(root, args["kill_on_delete"]).encode(), 0x200) >= 0
    import select
    def deleted_yet(timeout=None):
        # Polled, never read: an IN_DELETE stays queued, so the check before "done" sees it
        # even when this thread has not been scheduled since (the delete was the last step).
        return bool(select.select([watch_fd], [], [], timeout)[0])
    def on_delete():
        deleted_yet()
        die()
    threading.Thread(target=on_delete, daemon=True).start()
if args.get("kill_at"):
    # kill -9 this process at the kill_at[0]-th storage step (an int), or at the n-th call of the
    # step named "name#n" ("name": the first): before it, after it, or a few milliseconds into
    # it (kill_at[1]), as a crash or an OOM kill would. "hooks" adds steps ("module:function",
    # "module:Class.method").
    import importlib, lance
    from lance.dataset import MergeInsertBuilder
    import robodata.format._tables, robodata.integrity._gop_leases, robodata.ingest._writer
    step, phase, into_s = args["kill_at"]
    seen = []
    def is_hit(name):
        if isinstance(step, int):
            return len(seen) == step
        wanted, _, nth = step.partition("#")
        return name == wanted and seen.count(name) == int(nth or 1)
    def hooked(owner, name):
        real = getattr(owner, name)
        def call(*a, **k):
            seen.append(name)
            print("step " + name, flush=True)
            hit = is_hit(name)
            if hit and phase == "before":
                die()
            if hit and phase == "during":
                threading.Timer(into_s, die).start()
            result = real(*a, **k)
            if hit:
                die()
            return result
        setattr(owner, name, staticmethod(call) if isinstance(owner, type) and name == "commit" else call)
    hooked(robodata.format._tables, "write_fragments")
    hooked(lance.LanceDataset, "commit")
    hooked(MergeInsertBuilder, "execute")
    hooked(robodata.integrity._gop_leases, "write_record")
    hooked(robodata.ingest._writer, "release")
    for extra in args.get("hooks", []):  # "module:function" or "module:Class.method"
        module, _, attribute = extra.partition(":")
        owner = importlib.import_module(module)
        *classes, function = attribute.split(".")
        for name in classes:
            owner = getattr(owner, name)
        hooked(owner, function)
print("ready", flush=True)
try:
    if op == "ingest":
        import dataclasses
        result = robodata.ingest_episode(args["upload"], root, storage_options=options)
        print("result " + json.dumps(dataclasses.asdict(result)), flush=True)
    elif op == "annotate":
        import pyarrow as pa
        robodata.add_annotations(root, pa.table(args["labels"]), storage_options=options)
    elif op == "delete":
        robodata.delete_episodes(root, args["episodes"], storage_options=options)
    elif op == "compact":
        upkeep_dataset(root, older_than=timedelta(0), gc_min_age=timedelta(0), storage_options=options)
    elif op == "gc":
        robodata.collect_garbage(root, min_age=timedelta(0), storage_options=options)
    if args.get("kill_on_delete") and deleted_yet(0):
        die()
    print("done", flush=True)
except Exception:
    print("FAILED " + traceback.format_exc().replace("\n", " | "), flush=True)
    sys.exit(1)
"""


# The zygote: imports what CHILD uses, then forks a child per request on its control socket (a
# JSON message: argv, environment; with it the socket the child's output goes to). Once a child
# exits, the zygote writes EXIT and its exit code (-9: SIGKILLed) after its output and closes
# the socket. It exits when the test process closes its end of the control socket.
EXIT = b"\n\x00exit "
ZYGOTE = r"""
import sys, warnings
# Lance warns on every fork once imported; here no dataset was ever opened (no runtime to fork).
warnings.filterwarnings("ignore", message="lance is not fork-safe")
import lance, pyarrow, pyarrow.parquet, robodata, robodata.edits._upkeep, robodata.format._tables
import robodata.ingest._writer, robodata.integrity._gop_leases, robodata.integrity._verify
from lance.dataset import MergeInsertBuilder
from robodata_tests.crash_helpers import serve
serve(int(sys.argv[1]))
"""


def serve(control_fd: int) -> None:
    """The zygote's loop (single-threaded: nothing else runs while it forks)."""
    control = socket.socket(fileno=control_fd)
    control.send(b"ready")
    children: dict[int, tuple[int, int]] = {}  # pidfd -> (pid, output fd)
    while True:
        readable, _, _ = select.select([control, *children], [], [])
        for ready in readable:
            if ready is control:
                message, fds, _, _ = socket.recv_fds(control, 1 << 20, 1)
                if not message:  # the test process is gone
                    os._exit(0)
                pid = os.fork()
                if pid == 0:
                    control.close()
                    _child(json.loads(message), fds[0])
                pidfd = os.pidfd_open(pid)
                children[pidfd] = (pid, fds[0])
            else:
                pid, output = children.pop(ready)
                _, status = os.waitpid(pid, 0)
                os.write(output, EXIT + str(os.waitstatus_to_exitcode(status)).encode() + b"\n")
                os.close(output)
                os.close(ready)


def _child(request: dict, output: int) -> None:
    """In a forked child: run CHILD as ``python -c CHILD argv...`` would, then exit."""
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.close(null)
        os.close(output)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(REPO_ROOT)
        sys.argv = ["-c", *request["argv"]]
        try:
            exec(compile(CHILD, "<crash child>", "exec"), {"__name__": "__main__"})
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            import traceback

            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code)


class _Zygote:
    def __init__(self) -> None:
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
        self.process = subprocess.Popen(
            [sys.executable, "-c", ZYGOTE, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=env,
            cwd=REPO_ROOT,
        )
        theirs.close()
        self.lock = threading.Lock()
        self.control.settimeout(300)  # its imports, on a busy machine
        if self.control.recv(16) != b"ready":
            raise RuntimeError(f"the crash helpers' zygote did not start (exit code {self.process.poll()})")
        self.control.settimeout(None)

    def fork(self, argv: list[str], env: dict[str, str]) -> socket.socket:
        ours, theirs = socket.socketpair()
        with self.lock:
            socket.send_fds(self.control, [json.dumps({"argv": argv, "env": env}).encode()], [theirs.fileno()])
        theirs.close()
        return ours

    def close(self) -> None:
        self.control.close()  # the zygote exits on it
        self.process.wait(timeout=60)


_zygote: _Zygote | None = None
_zygote_lock = threading.Lock()


def _the_zygote() -> _Zygote:
    global _zygote
    with _zygote_lock:
        if _zygote is None or _zygote.process.poll() is not None:
            _zygote = _Zygote()
            atexit.register(_zygote.close)
        return _zygote


class Child:
    """A forked child: ``stdout`` (its output, unbuffered), ``returncode`` once it has exited
    (negative: the signal that ended it), ``communicate`` as ``subprocess.Popen``'s."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.stdout = sock.makefile("rb", buffering=0)
        self.returncode: int | None = None

    def communicate(self, timeout: float) -> tuple[bytes, None]:
        """The rest of the output, once the child has exited (``TimeoutError`` after ``timeout``)."""
        deadline = time.monotonic() + timeout
        chunks = []
        while True:
            self._sock.settimeout(max(deadline - time.monotonic(), 0.001))
            try:
                chunk = self._sock.recv(65536)
            except TimeoutError:
                raise TimeoutError(f"crash child still running after {timeout} s: {b''.join(chunks)!r}") from None
            if not chunk:
                break
            chunks.append(chunk)
        self.stdout.close()
        self._sock.close()
        output, _, code = b"".join(chunks).rpartition(EXIT)
        self.returncode = int(code)
        return output, None


def start(op: str, root: str, options: dict | None, **args) -> Child:
    """Start ``op`` in a child process; returns once it has imported robodata."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = Child(_the_zygote().fork([op, root, json.dumps(options), json.dumps(args)], env))
    # Unbuffered: "ready" is read a byte at a time, so nothing after it is left in a Python-side
    # buffer that communicate() (which reads the socket itself) would never see.
    assert proc.stdout.readline().strip() == b"ready"
    return proc


def _output(proc: Child, timeout: float) -> str:
    """The rest of ``proc``'s output, once it exits."""
    output, _ = proc.communicate(timeout=timeout)
    return output.decode(errors="replace")


def killed(proc: Child, timeout: float = 120) -> tuple[bool, list[str]]:
    """Wait for ``proc`` (started with ``kill_at``): whether it was killed, and the storage steps
    it began. Finishing is fine (the step was never reached); failing fails the test."""
    output = _output(proc, timeout)
    steps = [line.split(" ", 1)[1] for line in output.splitlines() if line.startswith("step ")]
    if proc.returncode == -9:
        return True, steps
    assert proc.returncode == 0 and "done" in output, output
    return False, steps


def finish(proc: Child, timeout: float = 300) -> str:
    """Wait for ``proc``; its output (a failure fails the test)."""
    output = _output(proc, timeout)
    assert proc.returncode == 0, output
    return output


def lease_files(root: str, options: dict | None) -> list[str]:
    folder = join_uri(root, STAGING_DIR)
    fs = fsspec_filesystem(folder, options)
    try:
        return [p for p in fs.ls(folder, detail=False) if p.rsplit("/", 1)[-1].startswith(LEASE_PREFIX)]
    except FileNotFoundError:
        return []
