"""The suite's markers: the quick loop leaves out slow, S3 and Dagster tests, and tests that
need torch skip cleanly where torch is not installed."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QUICK = "not slow and not s3 and not dagster"


def pytest_in_subprocess(*args: str, block_torch: bool = False) -> subprocess.CompletedProcess:
    # sys.modules["torch"] = None makes every `import torch` fail as if torch were not installed.
    blocker = "sys.modules['torch'] = None; " if block_torch else ""
    code = (
        f"import sys; {blocker}import pytest; code = pytest.main({list(args)!r}); "
        "print('dagster imported:', 'dagster' in sys.modules); sys.exit(code)"
    )
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_quick_loop_selects_no_slow_s3_or_dagster_test():
    run = pytest_in_subprocess("--collect-only", "-q", "-p", "no:cacheprovider", "-m", QUICK, "robodata_tests")
    assert run.returncode == 0, run.stdout + run.stderr
    ids = [line for line in run.stdout.splitlines() if "::" in line]
    assert len(ids) > 50
    assert not [i for i in ids if i.startswith("robodata_tests/orchestration/") or "s3" in i.split("::")[0]]
    assert not [i for i in ids if "test_benchmark.py" in i or "chromium" in i or "test_defs_interop" in i]
    assert "robodata_tests/view/test_view.py::test_page_states_the_episode_its_version_and_labels_as_bands" in ids
    assert "dagster imported: False" in run.stdout  # deselected files (and defs/conftest.py) never load
    # the files marked scheduled_first come first, and every file's tests stay together (xdist
    # hands out whole files in this order)
    runs = [file for file, _ in itertools.groupby(i.split("::")[0] for i in ids)]
    assert len(runs) == len(set(runs))
    assert set(runs[:2]) == {
        "robodata_tests/benchmarks/peers/test_peer_runner.py",
        "robodata_tests/lerobot/test_compat_dataset.py",
    }


@pytest.mark.slow
def test_torch_tests_skip_cleanly_without_torch():
    run = pytest_in_subprocess("-q", "-rs", "-p", "no:cacheprovider", "-m", "torch", "robodata_tests", block_torch=True)
    summary = run.stdout.strip().splitlines()[-2]  # the last is "dagster imported: ..."
    assert run.returncode == 0, run.stdout + run.stderr
    assert " skipped" in summary and "passed" not in summary and "error" not in summary, summary
    skipped = [line for line in run.stdout.splitlines() if line.startswith("SKIPPED")]
    assert {"test_torch_dataset.py", "test_loader_s3.py", "test_loader_bench.py"} <= {
        Path(line.split("]", 1)[1].strip().split(":", 1)[0]).name for line in skipped
    }, skipped
