#!/usr/bin/env bash
# What CI runs (.ci/run): install, then the checks from quickest to slowest, so a mistake fails in
# the first minutes: pre-commit (ruff, ruff format, file checks), the type checker beside Dagster
# from the command line on a clean instance (scripts/dagster_cli_check.sh), the quick tests, then
# the rest of the suite.
# Arguments go to both pytest runs (e.g. -x).
set -euo pipefail
cd "$(dirname "$0")/.."
# Python's default: each module is compiled once, when first imported, and its bytecode kept. A
# machine that sets PYTHONDONTWRITEBYTECODE makes every test process (hundreds: workers, Dagster
# runs, CLI calls) compile robodata and its tests again, and pip compile every installed module.
unset PYTHONDONTWRITEBYTECODE
bash scripts/install.sh
export PATH="$PWD/.venv/bin:$PATH"
stage() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }

stage "pre-commit: ruff, ruff format, file checks"
pre-commit run --all-files --show-diff-on-failure
stage "type checker (mypy, [tool.mypy] in pyproject.toml) beside Dagster from the command line"
# Each takes one core, so they run side by side; mypy's report is printed when both are done.
mypy_log=$(mktemp)
mypy > "$mypy_log" 2>&1 &
mypy_pid=$!
bash scripts/dagster_cli_check.sh
mypy_status=0
wait "$mypy_pid" || mypy_status=$?
cat "$mypy_log" && rm -f "$mypy_log"
[ "$mypy_status" -eq 0 ]
QUICK="not slow and not s3 and not dagster"
# pytest-xdist: a test file runs whole on one worker, so a module's servers and fixtures start
# once. The quick tests are CPU-bound: one worker per core. The rest spend a third of their time
# waiting on other processes (the cluster's runs, sensor and daemon ticks, servers starting): two
# workers per core keep the cores busy (the stage took 312 s on one worker per core, 247-254 s
# on two, at 97% CPU instead of 69%). ROBODATA_TEST_WORKERS sets both (0: one process). A worker
# that dies (pytest-timeout ends a hung test's worker) fails the run at once: xdist would start a
# new worker on the same file, up to 8 times, and a test that hangs again holds CI for hours.
# Those xdist options live in scripts/xdist.args (pytest reads an @file as arguments, one a line),
# which robodata_tests/test_hung_tests.py runs a hanging suite with.
CORES=$(nproc)
QUICK_WORKERS=${ROBODATA_TEST_WORKERS:-$CORES}
REST_WORKERS=${ROBODATA_TEST_WORKERS:-$((2 * CORES))}
# The cluster test (test_cluster.py, started first) mostly waits on its cluster's processes: its
# worker lowers the other workers' CPU priority (robodata_tests/xdist_priority.py), which still
# use every core it leaves idle.
# Each stage ends with its 25 slowest test phases: where the suite's time goes, on CI's machine.
PARALLEL=(@scripts/xdist.args --durations=25)
# A stage that outlives its bound is interrupted (pytest prints what ran and what failed), then
# killed: a stage's time at this 2-core machine's slower speed, plus a hung test's 10 minutes.
# --foreground keeps pytest in the terminal's process group, so Ctrl-C still stops it all.
bounded() {
  local seconds=$1
  shift
  timeout --foreground --signal=INT --kill-after=60 "$seconds" "$@"
}
stage "quick tests: -m '$QUICK'"
bounded 1200 python -m pytest -q -n "$QUICK_WORKERS" "${PARALLEL[@]}" -m "$QUICK" "$@"
stage "the rest: S3, Dagster and slow tests"
bounded 1800 python -m pytest -q -n "$REST_WORKERS" "${PARALLEL[@]}" -m "not ($QUICK)" "$@"
