"""Child processes for the crash and storm tests: each runs one robodata call in its own
interpreter (Lance is not fork-safe) and says when it is about to start; given ``kill_at`` it
SIGKILLs itself before, during or after one of its storage steps (lease write, data file write,
commit, merge, lease release), the points where a crash leaves different things behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from robodata.integrity.gop_leases import LEASE_PREFIX, STAGING_DIR
from robodata.storage import fsspec_filesystem, join_uri

REPO_ROOT = Path(__file__).resolve().parents[1]

# argv: operation, dataset root, JSON storage options, JSON arguments. Prints "ready" once
# robodata is imported (the kill delay counts from there), then "done" or the error.
CHILD = r"""
import json, sys, traceback
from datetime import timedelta
import robodata
from robodata.edits.upkeep import upkeep_dataset
op, root, options, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]) or None, json.loads(sys.argv[4])
if args.get("kill_at"):
    # kill -9 this process at the kill_at[0]-th storage step: before it, after it, or a few
    # milliseconds into it (kill_at[1]), as a crash or an OOM kill would.
    import os, signal, threading, lance
    from lance.dataset import MergeInsertBuilder
    import robodata.format.tables, robodata.integrity.gop_leases, robodata.ingest.writer
    step, phase, into_s = args["kill_at"]
    seen = []
    def die():
        os.kill(os.getpid(), signal.SIGKILL)
    def hooked(owner, name):
        real = getattr(owner, name)
        def call(*a, **k):
            seen.append(name)
            print("step " + name, flush=True)
            hit = len(seen) == step
            if hit and phase == "before":
                die()
            if hit and phase == "during":
                threading.Timer(into_s, die).start()
            result = real(*a, **k)
            if hit:
                die()
            return result
        setattr(owner, name, staticmethod(call) if isinstance(owner, type) and name == "commit" else call)
    hooked(robodata.format.tables, "write_fragments")
    hooked(lance.LanceDataset, "commit")
    hooked(MergeInsertBuilder, "execute")
    hooked(robodata.integrity.gop_leases, "write_record")
    hooked(robodata.ingest.writer, "release")
print("ready", flush=True)
try:
    if op == "ingest":
        robodata.ingest_episode(args["upload"], root, storage_options=options)
    elif op == "annotate":
        import pyarrow as pa
        robodata.add_annotations(root, pa.table(args["labels"]), storage_options=options)
    elif op == "delete":
        robodata.delete_episodes(root, args["episodes"], storage_options=options)
    elif op == "compact":
        upkeep_dataset(root, older_than=timedelta(0), gc_min_age=timedelta(0), storage_options=options)
    elif op == "gc":
        robodata.collect_garbage(root, min_age=timedelta(0), storage_options=options)
    print("done", flush=True)
except Exception:
    print("FAILED " + traceback.format_exc().replace("\n", " | "), flush=True)
    sys.exit(1)
"""


def start(op: str, root: str, options: dict | None, **args) -> subprocess.Popen:
    """Start ``op`` in a child process; returns once it has imported robodata."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
    # Unbuffered: "ready" is read a byte at a time, so nothing after it is left in a Python-side
    # buffer that communicate() (which reads the pipe itself) would never see.
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, op, root, json.dumps(options), json.dumps(args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        bufsize=0,
        env=env,
        cwd=REPO_ROOT,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"ready"
    return proc


def _output(proc: subprocess.Popen, timeout: float) -> str:
    """The rest of ``proc``'s output, once it exits."""
    output, _ = proc.communicate(timeout=timeout)
    return output.decode(errors="replace")


def killed(proc: subprocess.Popen, timeout: float = 120) -> tuple[bool, list[str]]:
    """Wait for ``proc`` (started with ``kill_at``): whether it was killed, and the storage steps
    it began. Finishing is fine (the step was never reached); failing fails the test."""
    output = _output(proc, timeout)
    steps = [line.split(" ", 1)[1] for line in output.splitlines() if line.startswith("step ")]
    if proc.returncode == -9:
        return True, steps
    assert proc.returncode == 0 and "done" in output, output
    return False, steps


def finish(proc: subprocess.Popen, timeout: float = 300) -> str:
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
