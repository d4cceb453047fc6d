#!/usr/bin/env bash
# Create .venv and install robodata with every extra (test pulls in dagster, interop and plots;
# torch is the CPU 2.13.0 wheel) at the exact versions CI tests: constraints.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_system.sh
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# --no-compile: pip byte-compiles every installed module (half the install's time, torch's mostly);
# Python compiles the ones a run imports, once, as it imports them.
.venv/bin/python -m pip install -q --no-compile -c constraints.txt -e ".[test,torch]"
bash scripts/install_cluster.sh
