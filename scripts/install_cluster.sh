#!/usr/bin/env bash
# Install what running robodata on a cluster needs (PostgreSQL instance storage, Celery run
# launcher with a Redis broker) into .venv. Debian's postgresql and redis-server come from
# scripts/debian-packages.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m pip install -q -r deploy/requirements-cluster.txt
# --no-deps: these pin dagster==1.13.27; robodata pins 1.13.28 (see deploy/requirements-cluster.txt).
.venv/bin/python -m pip install -q --no-deps dagster-postgres==0.29.27 dagster-celery==0.29.27
