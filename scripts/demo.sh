#!/usr/bin/env bash
# Install and run the demo on the embedded default: a local folder, sample data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/robodata demo --workdir demo
