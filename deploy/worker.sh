#!/usr/bin/env bash
# One Celery worker of a robodata cluster: takes runs (one episode each) off the Redis queue and
# executes them. Start one per machine (or several); each is its own process.
#   usage: deploy/worker.sh NAME [CONCURRENCY]     (environment: deploy/cluster.env)
set -euo pipefail
name=${1:?worker name, e.g. w1}
concurrency=${2:-2}   # runs at once in this worker: about one per two cores (video encoding)
# --disable-prefetch: a worker takes a run off the queue only when it has a free slot, so runs
# spread over idle workers, and a worker that dies loses only the runs it was executing.
exec celery -A dagster_celery.app \
    --broker "$DAGSTER_CELERY_BROKER_URL" --result-backend "$DAGSTER_CELERY_BACKEND_URL" \
    worker --queues dagster --hostname "$name@%h" \
    --concurrency "$concurrency" --disable-prefetch --loglevel INFO
