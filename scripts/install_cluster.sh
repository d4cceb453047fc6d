#!/usr/bin/env bash
# Install what running robodata on a cluster needs (PostgreSQL instance storage, Celery run
# launcher with a Redis broker) into .venv. Debian's postgresql and redis-server come from
# scripts/debian-packages.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
# dagster-postgres and dagster-celery come with robodata's [dagster] extra; constraints.txt pins
# them with the dagster release they are built for.
.venv/bin/python -m pip install -q -c constraints.txt -r deploy/requirements-cluster.txt
