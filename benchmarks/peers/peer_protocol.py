"""Talking to ``peer_runner.py``: where the peers' Python is, one job per process, its JSON result.

>>> result = run_job(peer_python(".peers-venv"), {"system": "lancedb", "root": "out/work/lance",  # doctest: +SKIP
...                  "measurements": [{"name": "A", "kind": "sample", "indices": [3, 9]}]})
>>> result["measurements"][0]["seconds"]  # doctest: +SKIP
[0.031, 0.029]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.peers.peer_runner import PROTOCOL, RESULT_PREFIX

RUNNER = Path(__file__).with_name("peer_runner.py")
REPO_ROOT = Path(__file__).resolve().parents[2]


class PeerRunError(RuntimeError):
    """A runner process failed or did not answer in the protocol."""


def peer_python(venv: str | os.PathLike) -> Path:
    """The Python of the peers' venv (``scripts/peers.sh`` builds it), checked to exist."""
    python = Path(venv) / "bin" / "python"
    if not python.exists():
        raise FileNotFoundError(
            f"{venv}: no peers venv here ({python} is missing); build it with 'bash scripts/peers.sh {venv}'"
        )
    return python


def runner_env(python: str | os.PathLike) -> dict[str, str]:
    """Environment of a runner: offline Hugging Face hub (the peers read local folders only);
    robodata's own Python also finds the robodata package it runs from.

    Runners keep Python's default of writing bytecode: where the machine sets
    PYTHONDONTWRITEBYTECODE and a venv was installed without compiling (scripts/install.sh on
    such a machine), every DataLoader worker the runner spawns would compile torch from source
    again, and the first batch would measure that instead of the reader (8 s against 1.7 s here).
    """
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    env.update({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
    if Path(python) == Path(sys.executable):
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def parse_runner_output(stdout: str, where: str = "peer runner") -> dict:
    """The result a runner printed: the last ``PEER_RESULT {json}`` line (peers may print
    other lines to stdout). Raises PeerRunError when it is missing, malformed or an error.

    >>> out = 'log line\\nPEER_RESULT {"protocol": 1, "system": "robodata"}\\n'  # doctest: +SKIP
    >>> parse_runner_output(out)["system"]  # doctest: +SKIP
    'robodata'
    """
    lines = [line for line in stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if not lines:
        raise PeerRunError(f"{where}: printed no {RESULT_PREFIX.strip()} line")
    try:
        result = json.loads(lines[-1][len(RESULT_PREFIX) :])
    except json.JSONDecodeError as exc:
        raise PeerRunError(f"{where}: its {RESULT_PREFIX.strip()} line is not JSON ({exc})") from exc
    if not isinstance(result, dict):
        raise PeerRunError(f"{where}: its result is not a JSON object")
    if "error" in result:
        raise PeerRunError(f"{where}: {result['error']}")
    if result.get("protocol") != PROTOCOL:
        raise PeerRunError(f"{where}: speaks protocol {result.get('protocol')}, expected {PROTOCOL}")
    return result


def run_job(
    python: str | os.PathLike, job: dict, *, timeout: float = 1800, log: Path | None = None, nice: int = 0
) -> dict:
    """Run ``job`` in a fresh ``python peer_runner.py`` process and return its result.

    ``log`` receives the runner's stderr (the peers' warnings); ``nice`` lowers its priority.
    """
    command = [str(python), str(RUNNER)]
    if nice:
        command = ["nice", "-n", str(nice), *command]
    where = f"{job.get('system')} runner ({python})"
    try:
        done = subprocess.run(
            command,
            input=json.dumps({"protocol": PROTOCOL, **job}),
            capture_output=True,
            text=True,
            timeout=timeout,
            env=runner_env(python),
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise PeerRunError(f"{where}: no answer within {timeout:g} s") from exc
    if log is not None:
        with open(log, "a") as f:
            f.write(f"--- {where}: {', '.join(m['name'] for m in job.get('measurements', []))}\n{done.stderr}\n")
    try:
        return parse_runner_output(done.stdout, where)
    except PeerRunError as exc:
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise PeerRunError(f"{exc} (exit code {done.returncode}; stderr ends: {tail})") from None
