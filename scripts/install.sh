#!/usr/bin/env bash
# Create .venv and install robodata with every extra (test pulls in dagster, interop and plots;
# torch is the CPU 2.13.0 wheel) at the exact versions CI tests: constraints.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_system.sh
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# Byte-compiling everything pip installs is half the install's time. Where Python writes bytecode
# (its default; scripts/test.sh makes sure), a module is compiled once, when first imported, so
# only what runs is compiled. Where PYTHONDONTWRITEBYTECODE is set (this machine sets it), nothing
# would be kept and every process would compile torch again (the quick tests took 290 s instead
# of 180): pip compiles at install then.
COMPILE=()
[ -n "${PYTHONDONTWRITEBYTECODE:-}" ] || COMPILE=(--no-compile)
.venv/bin/python -m pip install -q "${COMPILE[@]}" -c constraints.txt -e ".[test,torch]"
bash scripts/install_cluster.sh
