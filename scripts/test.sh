#!/usr/bin/env bash
# Install, lint, run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/python -m ruff check robodata robodata_tests
.venv/bin/python -m pytest -q "$@"
