#!/usr/bin/env bash
# Install and run the demo on the embedded default: a local folder, sample data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/robodata demo --workdir demo
echo
echo "Next, the Dagster UI (from the repository root) on this demo's instance, or DAGSTER_HOME=\$PWD for the root one:"
echo "  source .venv/bin/activate"
echo "  DAGSTER_HOME=\$PWD/demo/dagster_home dg dev"
