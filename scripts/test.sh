#!/usr/bin/env bash
# Install, lint, run the test suite, then one `dagster asset materialize` from a clean instance.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/python -m ruff check robodata robodata_tests benchmarks examples
.venv/bin/python -m ruff format --check robodata robodata_tests benchmarks examples
.venv/bin/python -m pytest -q "$@"

# Dagster from the command line, as a user would run it: validate the definitions, write one
# sample upload, register its partition, materialize the episode (checks included) in-process.
ci_tmp=$(mktemp -d)
trap 'rm -rf "$ci_tmp"' EXIT
export DAGSTER_HOME="$ci_tmp/dagster_home" ROBODATA_ROOT="$ci_tmp/dataset" ROBODATA_UPLOADS="$ci_tmp/uploads"
mkdir -p "$DAGSTER_HOME" && cp dagster.yaml "$DAGSTER_HOME/"
.venv/bin/dagster definitions validate -m robodata.definitions
.venv/bin/robodata sample-data "$ROBODATA_UPLOADS" --episodes 1 --seconds 1
.venv/bin/robodata register-uploads
.venv/bin/dagster asset materialize -m robodata.definitions \
    --select 'raw_episodes,gop_blobs,aligned_frames' --partition episode_000000 \
    --config-json '{"execution": {"config": {"in_process": {}}}}'
.venv/bin/robodata info "$ROBODATA_ROOT"
