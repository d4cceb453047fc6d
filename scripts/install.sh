#!/usr/bin/env bash
# Create .venv and install robodata with every extra (test pulls in dagster, interop and plots;
# torch is the CPU 2.13.0 wheel) at the exact versions CI tests: constraints.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_system.sh
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# pip byte-compiles what it installs (half the install's time): worth it, since this machine sets
# PYTHONDONTWRITEBYTECODE=1, so a module pip did not compile is compiled again by every process
# that imports it (without it, the quick tests took 290 s instead of 180).
.venv/bin/python -m pip install -q -c constraints.txt -e ".[test,torch]"
bash scripts/install_cluster.sh
