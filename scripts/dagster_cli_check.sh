#!/usr/bin/env bash
# Dagster from the command line, as a user would run it on a clean instance (scripts/test.sh runs
# it): validate the definitions, write one sample upload, register its partition, materialize the
# episode (checks included) in-process, and print the dataset's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
ci_tmp=$(mktemp -d)
trap 'rm -rf "$ci_tmp"' EXIT
export DAGSTER_HOME="$ci_tmp/dagster_home" ROBODATA_ROOT="$ci_tmp/dataset" ROBODATA_UPLOADS="$ci_tmp/uploads"
robodata dagster-home "$DAGSTER_HOME"  # the instance config (its storage under $DAGSTER_HOME)
dagster definitions validate -m robodata.orchestration.definitions
robodata sample-data "$ROBODATA_UPLOADS" --episodes 1 --seconds 1
robodata register-uploads
dagster asset materialize -m robodata.orchestration.definitions \
    --select 'raw_episodes,gop_blobs,aligned_frames' --partition episode_000000
robodata info "$ROBODATA_ROOT"
