#!/usr/bin/env bash
# What CI runs (.ci/run): install, then the checks from quickest to slowest, so a mistake fails in
# the first minutes: pre-commit (ruff, ruff format, file checks), the type checker, the quick
# tests, the rest of the suite, then Dagster from the command line on a clean instance.
# Arguments go to both pytest runs (e.g. -x).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
export PATH="$PWD/.venv/bin:$PATH"
stage() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }

stage "pre-commit: ruff, ruff format, file checks"
pre-commit run --all-files --show-diff-on-failure
stage "type checker (mypy, [tool.mypy] in pyproject.toml)"
mypy
QUICK="not slow and not s3 and not dagster"
stage "quick tests: -m '$QUICK'"
python -m pytest -q -m "$QUICK" "$@"
stage "the rest: S3, Dagster and slow tests"
python -m pytest -q -m "not ($QUICK)" "$@"

stage "Dagster from the command line"
# Dagster from the command line, as a user would run it: validate the definitions, write one
# sample upload, register its partition, materialize the episode (checks included) in-process.
ci_tmp=$(mktemp -d)
trap 'rm -rf "$ci_tmp"' EXIT
export DAGSTER_HOME="$ci_tmp/dagster_home" ROBODATA_ROOT="$ci_tmp/dataset" ROBODATA_UPLOADS="$ci_tmp/uploads"
mkdir -p "$DAGSTER_HOME" && cp robodata/dagster_home/dagster.yaml "$DAGSTER_HOME/"
dagster definitions validate -m robodata.definitions
robodata sample-data "$ROBODATA_UPLOADS" --episodes 1 --seconds 1
robodata register-uploads
dagster asset materialize -m robodata.definitions \
    --select 'raw_episodes,gop_blobs,aligned_frames' --partition episode_000000
robodata info "$ROBODATA_ROOT"
