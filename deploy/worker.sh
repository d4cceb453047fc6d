#!/usr/bin/env bash
# One Celery worker of a robodata cluster: takes runs (one episode each) off the Redis queue and
# executes them. Start one per machine (or several); each is its own process.
#   usage: deploy/worker.sh NAME [CONCURRENCY]     (environment: deploy/cluster.env)
set -euo pipefail
name=${1:?worker name, e.g. w1}
concurrency=${2:-2}   # runs at once in this worker: about one per two cores (video encoding)
exec celery -A dagster_celery.app \
    --broker "$DAGSTER_CELERY_BROKER_URL" --result-backend "$DAGSTER_CELERY_BACKEND_URL" \
    worker --queues dagster --hostname "$name@%h" \
    --concurrency "$concurrency" --prefetch-multiplier 1 --loglevel INFO
