#!/usr/bin/env bash
# A robodata cluster's processes on this machine, started and stopped together:
#   postgres   PostgreSQL (Debian's server) on DAGSTER_PG_PORT, with the role and the database
#   redis      Redis (Debian's redis-server) on the port of DAGSTER_CELERY_BROKER_URL
#   s3         the buckets of ROBODATA_ROOT / ROBODATA_UPLOADS on the S3 endpoint (made if
#              missing); with ROBODATA_S3_SERVER=moto, moto's server on AWS_ENDPOINT_URL first
#   daemon     the Dagster daemon (sensor, run queue, run monitoring, run retries)
#   webserver  the Dagster UI on ROBODATA_WEBSERVER_HOST:ROBODATA_WEBSERVER_PORT
#   workers    ROBODATA_WORKERS Celery workers (deploy/worker.sh), ROBODATA_WORKER_CONCURRENCY runs each
#
# usage: deploy/cluster.sh up|down|status [COMPONENT...]    (default: all of the above)
#        deploy/cluster.sh wait EPISODES [TIMEOUT_S]        (until the dataset holds EPISODES
#                                                            episodes and no run is in flight)
# Environment: deploy/cluster.env (filled in) or deploy/local.env (everything on 127.0.0.1).
# State (databases, logs, process ids) lives in ROBODATA_CLUSTER_DIR. Commands (dagster,
# celery, robodata, moto_server) come from PATH: activate robodata's virtualenv first.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ALL=(postgres redis s3 daemon webserver workers)
: "${ROBODATA_CLUSTER_DIR:?set ROBODATA_CLUSTER_DIR (load deploy/cluster.env or deploy/local.env)}"
DIR=$ROBODATA_CLUSTER_DIR
RUN=$DIR/run
LOGS=$DIR/logs
WORKERS=${ROBODATA_WORKERS:-2}
CONCURRENCY=${ROBODATA_WORKER_CONCURRENCY:-1}
STOP_TIMEOUT=${ROBODATA_STOP_TIMEOUT:-60}   # seconds a worker may finish its runs on `down`

say() { printf 'cluster: %s\n' "$*"; }
die() { printf 'cluster: error: %s\n' "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "$1 not found on PATH ($2)"; }
is_root() { [ "$(id -u)" -eq 0 ]; }

# --- processes: supervisord (from robodata's cluster requirements) runs redis, moto, the daemon,
# the webserver and the workers, each in a process group of its own, restarts any of them that
# exits or is killed, and writes its output to $LOGS/NAME.log. Its config is written when `up`
# starts it.
SUPERVISOR_CONF=$DIR/supervisord.conf
ctl() { supervisorctl -c "$SUPERVISOR_CONF" "$@"; }
supervisor_up() { [ -S "$RUN/supervisor.sock" ] && ctl pid >/dev/null 2>&1; }
program() {  # NAME STOPWAIT COMMAND...: one [program:NAME] section
    local name=$1 stopwait=$2; shift 2
    local command
    command=$(printf '%q ' "$@")
    # autostart=false: `up COMPONENT` starts what it is asked to. SIGTERM to the process only (a
    # Celery worker then finishes its runs, the daemon and the webserver stop their code servers;
    # a SIGTERM to a run's own process would interrupt it mid-step); after STOPWAIT s, SIGKILL to
    # its whole group (a Celery pool process, a code server). startsecs: running that long counts
    # as started; a crash loop is retried with a growing back-off, then given up on (status FATAL).
    cat <<CONF
[program:$name]
command=${command% }
directory=$DIR
autostart=false
autorestart=true
startsecs=3
startretries=20
stopsignal=TERM
stopwaitsecs=$stopwait
stopasgroup=false
killasgroup=true
redirect_stderr=true
stdout_logfile=$LOGS/$name.log
stdout_logfile_maxbytes=50MB
stdout_logfile_backups=3

CONF
}
write_supervisor_conf() {
    local i tmp=$SUPERVISOR_CONF.new
    {
        cat <<CONF
[unix_http_server]
file=$RUN/supervisor.sock
chmod=0700

[supervisord]
logfile=$LOGS/supervisord.log
pidfile=$RUN/supervisord.pid
directory=$DIR

[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface

[supervisorctl]
serverurl=unix://$RUN/supervisor.sock

CONF
        program redis 30 redis-server --bind "$(url_host "$DAGSTER_CELERY_BROKER_URL")" \
            --port "$(url_port "$DAGSTER_CELERY_BROKER_URL" 6379)" --dir "$DIR/redis" --save "" --appendonly yes
        if [ "${ROBODATA_S3_SERVER:-}" = moto ]; then
            program s3 30 moto_server -H "$(url_host "$AWS_ENDPOINT_URL")" -p "$(url_port "$AWS_ENDPOINT_URL" 80)"
        fi
        # The daemon first queues again any run its predecessor was killed while launching.
        program daemon 30 python -m robodata.orchestration.cluster.daemon -m robodata.orchestration.definitions
        program webserver 30 dagster-webserver -m robodata.orchestration.definitions \
            -h "${ROBODATA_WEBSERVER_HOST:-127.0.0.1}" -p "${ROBODATA_WEBSERVER_PORT:-3000}"
        for i in $(seq "$WORKERS"); do
            program "worker-w$i" "$STOP_TIMEOUT" bash "$REPO/deploy/worker.sh" "w$i" "$CONCURRENCY"
        done
    } >"$tmp"
    mv "$tmp" "$SUPERVISOR_CONF"
}
ensure_supervisor() {
    need supervisord "bash scripts/install_cluster.sh (robodata's cluster requirements)"
    # A running supervisord keeps its config and its environment (`supervisorctl update` would
    # stop a changed program without starting it again): a new config takes `down`, then `up`.
    if ! supervisor_up; then
        write_supervisor_conf
        supervisord -c "$SUPERVISOR_CONF"
        for _ in $(seq 150); do supervisor_up && return 0; sleep 0.2; done
        die "supervisord did not start; see $LOGS/supervisord.log"
    fi
}
start_bg() {  # NAME: start the supervised program NAME (already running: say so)
    local name=$1
    if running "$name"; then say "$name already running (pid $(ctl pid "$name"))"; return; fi
    ctl start "$name" >/dev/null || die "$name did not start; see $LOGS/$name.log"
}
running() {  # NAME: supervisord runs the program NAME now
    local out
    supervisor_up || return 1
    out=$(ctl status "$1" 2>/dev/null) || true
    [[ $out == *" RUNNING "* ]]
}
programs_active() {  # supervisord runs, starts, stops or restarts a program; not sure: yes
    # Read the whole answer before matching it: `ctl status | grep -q` under pipefail fails
    # when grep exits first, and an unanswered status (a busy supervisord) lists nothing; either
    # made `down postgres` shut supervisord and every program down.
    local out rc=0
    out=$(ctl status 2>&1) || rc=$?
    [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || return 0  # 3: some program is stopped; else no answer
    grep -Eq " (RUNNING|STARTING|BACKOFF|STOPPING) " <<<"$out"
}
stop_bg() {  # NAME: supervisord's stop (SIGTERM, then SIGKILL to the group after its stopwaitsecs)
    local name=$1 pid
    supervisor_up || return 0
    ctl status "$name" >/dev/null 2>&1 || [ $? -ne 4 ] || return 0  # 4: no such program
    pid=$(ctl pid "$name" 2>/dev/null || true)
    ctl stop "$name" >/dev/null 2>&1 || true
    # Whatever is left of its process group (a code server, a Celery pool process): supervisord
    # kills the group only when the process itself outlives stopwaitsecs.
    if [ "${pid:-0}" -gt 0 ] 2>/dev/null; then kill -KILL -- "-$pid" 2>/dev/null || true; fi
    say "$name stopped"
}
wait_port() {  # HOST PORT WHAT [NAME]: until HOST:PORT accepts connections (60 s)
    for _ in $(seq 300); do
        (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0
        if [ -n "${4:-}" ] && ! running "$4"; then die "$3 exited; see $LOGS/$4.log"; fi
        sleep 0.2
    done
    die "$3 not listening on $1:$2 after 60 s"
}
url_host() { local u=${1#*://}; u=${u#*@}; u=${u%%/*}; echo "${u%%:*}"; }
url_port() { local u=${1#*://}; u=${u#*@}; u=${u%%/*}; [[ $u == *:* ]] && echo "${u##*:}" || echo "$2"; }

# --- PostgreSQL: a cluster of its own in $DIR/postgres (socket there too), the role, the database
PG_BIN=${ROBODATA_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)}
PGDIR=$DIR/postgres
as_pg() { if is_root; then runuser -u postgres -- "$@"; else "$@"; fi; }  # it refuses to run as root
pg_ctl_() { as_pg "$PG_BIN/pg_ctl" -D "$PGDIR/data" "$@"; }
psql_su() { as_pg "$PG_BIN/psql" -h "$PGDIR" -p "$DAGSTER_PG_PORT" -U postgres -d postgres -qAt -v ON_ERROR_STOP=1 "$@"; }

up_postgres() {
    [ -x "$PG_BIN/initdb" ] || die "PostgreSQL not found (${PG_BIN:-/usr/lib/postgresql/*/bin}): bash scripts/install_system.sh"
    mkdir -p "$PGDIR"
    if is_root; then
        chown postgres: "$PGDIR"
        runuser -u postgres -- test -x "$PGDIR" ||
            die "PostgreSQL runs as the postgres user, which cannot enter $PGDIR: choose a ROBODATA_CLUSTER_DIR whose parent folders it may enter"
    fi
    chmod 700 "$PGDIR"
    if [ ! -f "$PGDIR/data/PG_VERSION" ]; then
        # The superuser connects through the socket in $PGDIR only (a folder only it may enter);
        # over TCP every role needs its password.
        as_pg "$PG_BIN/initdb" -D "$PGDIR/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
            -E UTF8 --no-locale >"$LOGS/postgres-initdb.log"
    fi
    # Worker and control machines elsewhere: ROBODATA_PG_ALLOW (a network, e.g. 10.0.0.0/8) may
    # connect with a password (initdb allows 127.0.0.1 and ::1 only).
    if [ -n "${ROBODATA_PG_ALLOW:-}" ] && ! grep -q "robodata: $ROBODATA_PG_ALLOW\$" "$PGDIR/data/pg_hba.conf"; then
        printf 'host all all %s scram-sha-256  # robodata: %s\n' "$ROBODATA_PG_ALLOW" "$ROBODATA_PG_ALLOW" |
            as_pg tee -a "$PGDIR/data/pg_hba.conf" >/dev/null
        pg_ctl_ status >/dev/null 2>&1 && pg_ctl_ reload >/dev/null
    fi
    if pg_ctl_ status >/dev/null 2>&1; then
        say "postgres already running"
    else
        pg_ctl_ -l "$PGDIR/server.log" -w -t 60 \
            -o "-p $DAGSTER_PG_PORT -k $PGDIR -c listen_addresses=${ROBODATA_PG_LISTEN:-$DAGSTER_PG_HOST}" start >/dev/null
    fi
    psql_su -v user="$DAGSTER_PG_USER" -v password="$DAGSTER_PG_PASSWORD" -v db="$DAGSTER_PG_DB" <<'SQL'
SELECT format('CREATE ROLE %I LOGIN', :'user') WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'user') \gexec
ALTER ROLE :"user" WITH LOGIN PASSWORD :'password';
SELECT format('CREATE DATABASE %I OWNER %I', :'db', :'user') WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'db') \gexec
SQL
    say "postgres on $DAGSTER_PG_HOST:$DAGSTER_PG_PORT (role $DAGSTER_PG_USER, database $DAGSTER_PG_DB)"
}
down_postgres() {
    [ -f "$PGDIR/data/PG_VERSION" ] && pg_ctl_ status >/dev/null 2>&1 || return 0
    pg_ctl_ -m fast -w -t 60 stop >/dev/null
    say "postgres stopped"
}
status_postgres() { [ -f "$PGDIR/data/PG_VERSION" ] && pg_ctl_ status >/dev/null 2>&1; }

# --- Redis: no snapshots, an append-only file in $DIR/redis (queued runs survive a restart)
up_redis() {
    need redis-server "bash scripts/install_system.sh"
    local host port
    host=$(url_host "$DAGSTER_CELERY_BROKER_URL"); port=$(url_port "$DAGSTER_CELERY_BROKER_URL" 6379)
    mkdir -p "$DIR/redis"
    start_bg redis
    wait_port "$host" "$port" redis-server redis
    say "redis on $host:$port"
}

# --- S3: moto's server for the local walk-through and the tests; the buckets on any endpoint
up_s3() {
    if [ "${ROBODATA_S3_SERVER:-}" = moto ]; then
        need moto_server "robodata's test extra"
        local host port
        host=$(url_host "$AWS_ENDPOINT_URL"); port=$(url_port "$AWS_ENDPOINT_URL" 80)
        start_bg s3
        wait_port "$host" "$port" moto_server s3
    fi
    python - "$ROBODATA_ROOT" "$ROBODATA_UPLOADS" <<'PY'
import os, sys
import boto3, botocore.exceptions
s3 = boto3.client("s3")  # endpoint, credentials and region from the AWS_* environment
for bucket in sorted({u.split("://", 1)[1].split("/", 1)[0] for u in sys.argv[1:] if u.startswith("s3://")}):
    try:
        s3.head_bucket(Bucket=bucket)
    except botocore.exceptions.ClientError as exc:
        if exc.response["Error"]["Code"] not in ("404", "NoSuchBucket"):
            raise SystemExit(f"cluster: error: bucket {bucket}: {exc.response['Error']['Code']}")
        region = os.environ.get("AWS_REGION", "us-east-1")
        where = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
        s3.create_bucket(Bucket=bucket, **where)
        print(f"cluster: bucket {bucket} created")
PY
}

# --- Dagster: the instance (deploy/dagster.yaml), the daemon, the webserver, the workers
prepare_dagster_home() {
    local runs=${ROBODATA_MAX_RUNS:-$((WORKERS * CONCURRENCY))}
    mkdir -p "$DAGSTER_HOME"
    sed -E "s/^( *max_concurrent_runs:).*/\1 $runs/" "$REPO/deploy/dagster.yaml" >"$DAGSTER_HOME/dagster.yaml"
}
up_daemon() {
    need dagster-daemon "activate robodata's virtualenv"
    prepare_dagster_home
    # Creates the tables once (the instance of every cluster process leaves them alone:
    # should_autocreate_tables in deploy/dagster.yaml), and sets the pool's limit before any run:
    # two runs creating the pool's row at once collide in PostgreSQL.
    local setup=$DIR/dagster_setup
    mkdir -p "$setup"
    sed -E 's/^( *should_autocreate_tables:).*/\1 true/' "$DAGSTER_HOME/dagster.yaml" >"$setup/dagster.yaml"
    DAGSTER_HOME=$setup dagster instance concurrency set video_encode \
        "${ROBODATA_ENCODE_SLOTS:-$((WORKERS * CONCURRENCY))}" >/dev/null
    start_bg daemon
    # Ready when the daemon itself says so: a heartbeat it wrote after this start.
    local since
    since=$(date +%s)
    for _ in $(seq 900); do
        heartbeat_after "$since" && break
        running daemon || die "daemon exited; see $LOGS/daemon.log"
        sleep 0.2
    done
    heartbeat_after "$since" || die "daemon wrote no heartbeat within 180 s; see $LOGS/daemon.log"
    say "daemon running (log $LOGS/daemon.log)"
}
up_webserver() {
    need dagster-webserver "activate robodata's virtualenv"
    prepare_dagster_home
    local host=${ROBODATA_WEBSERVER_HOST:-127.0.0.1} port=${ROBODATA_WEBSERVER_PORT:-3000}
    start_bg webserver
    wait_port "$host" "$port" dagster-webserver webserver
    say "webserver on http://$host:$port"
}
up_workers() {
    need celery "activate robodata's virtualenv"
    prepare_dagster_home
    local i
    for i in $(seq "$WORKERS"); do start_bg "worker-w$i"; done
    # Ready when the worker itself answers Celery's ping (not a line of an older log).
    for i in $(seq "$WORKERS"); do
        for _ in $(seq 180); do
            worker_answers "w$i" && break
            running "worker-w$i" || die "worker w$i exited; see $LOGS/worker-w$i.log"
        done
        worker_answers "w$i" || die "worker w$i not ready after 180 s; see $LOGS/worker-w$i.log"
    done
    say "$WORKERS workers ready, $CONCURRENCY run(s) each"
}
worker_answers() {  # NAME: the worker NAME@this host answers a ping (1 s)
    celery -A dagster_celery.app --broker "$DAGSTER_CELERY_BROKER_URL" inspect ping \
        --destination "$1@$(hostname)" --timeout 1 >/dev/null 2>&1
}
heartbeat_after() {  # EPOCH_S: the daemon wrote a heartbeat after EPOCH_S
    python - "$1" <<'PY'
import sys
import dagster as dg
with dg.DagsterInstance.get() as instance:
    beats = instance.get_daemon_heartbeats()
    sys.exit(0 if any(beat.timestamp > float(sys.argv[1]) for beat in beats.values()) else 1)
PY
}
worker_names() { supervisor_up && ctl status 2>/dev/null | awk '/^worker-/ {print $1}'; }

cmd_up() {
    mkdir -p "$DIR" "$RUN" "$LOGS"
    if is_root; then chmod o+x "$DIR"; fi  # PostgreSQL (the postgres user) enters $DIR/postgres
    ensure_supervisor
    local c
    for c in "$@"; do
        case $c in
            postgres | redis | s3 | daemon | webserver | workers) "up_$c" ;;
            *) die "unknown component $c (one of: ${ALL[*]})" ;;
        esac
    done
}
cmd_down() {
    local c w
    for c in $(printf '%s\n' "$@" | tac); do
        case $c in
            workers) for w in $(worker_names); do stop_bg "$w"; done ;;
            postgres) down_postgres ;;
            redis | s3 | daemon | webserver) stop_bg "$c" ;;
            *) die "unknown component $c (one of: ${ALL[*]})" ;;
        esac
    done
    # Nothing left to supervise: supervisord goes too.
    if supervisor_up && ! programs_active; then
        local supervisord
        supervisord=$(cat "$RUN/supervisord.pid" 2>/dev/null || true)
        ctl shutdown >/dev/null 2>&1 || true
        # until the process is gone (it removes its pid file before it has exited)
        for _ in $(seq 150); do [ -n "$supervisord" ] && kill -0 "$supervisord" 2>/dev/null || break; sleep 0.2; done
    fi
}
cmd_status() {
    local c w down=0
    for c in "$@"; do
        case $c in
            postgres) if status_postgres; then say "postgres running"; else say "postgres stopped"; down=1; fi ;;
            workers)
                for w in $(worker_names); do
                    if running "$w"; then say "$w running (pid $(ctl pid "$w"))"; else say "$w stopped"; down=1; fi
                done ;;
            s3) [ "${ROBODATA_S3_SERVER:-}" = moto ] || continue
                if running s3; then say "s3 (moto) running (pid $(ctl pid s3))"; else say "s3 (moto) stopped"; down=1; fi ;;
            *) if running "$c"; then say "$c running (pid $(ctl pid "$c"))"; else say "$c stopped"; down=1; fi ;;
        esac
    done
    return $down
}

action=${1:-}
shift || true
if [ "$action" != wait ] && [ $# -eq 0 ]; then set -- "${ALL[@]}"; fi
case $action in
    up) cmd_up "$@" ;;
    down) cmd_down "$@" ;;
    status) cmd_status "$@" ;;
    wait) exec python -m robodata.orchestration.cluster.progress --episodes "${1:?EPISODES}" --timeout "${2:-900}" ;;
    *) die "usage: deploy/cluster.sh up|down|status [COMPONENT...] | wait EPISODES [TIMEOUT_S]" ;;
esac
