#!/usr/bin/env bash
# Install and run the demo on the embedded default: a local folder, sample data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/robodata demo --workdir demo
echo
echo "Next, the Dagster UI on this demo's instance:"
echo "  source .venv/bin/activate"
echo "  DAGSTER_HOME=\$PWD/demo/dagster_home dagster dev -m robodata.orchestration.definitions"
