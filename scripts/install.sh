#!/usr/bin/env bash
# Create .venv and install robodata with its test and torch extras (CPU torch 2.13.0).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_system.sh
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test,torch]"
bash scripts/install_cluster.sh
