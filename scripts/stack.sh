#!/usr/bin/env bash
# PostgreSQL + MLflow tracking server on this machine, bound to 127.0.0.1, for Optuna studies shared
# by many workers and MLflow runs logged over HTTP (docs/scaling.md).
#
#   scripts/stack.sh up     [DIR]   start (or find running) PostgreSQL and `mlflow server`; print the URIs
#   scripts/stack.sh status [DIR]   say what runs; exit 1 when something is down
#   scripts/stack.sh down   [DIR]   stop both; data stays in DIR (remove DIR to forget it)
#   scripts/stack.sh install        apt-get install Debian's PostgreSQL (root)
#
# DIR defaults to $ARGENT_STACK_DIR, else .stack/ in the current folder. It holds the database
# cluster, MLflow's artifacts, logs, and stack.env (ports, password, URIs; mode 600). Running `up`
# twice starts nothing new. Exit code 77: a daemon was refused by this machine (its log is printed).
# Needs: Debian's postgresql (`install`), and python with mlflow + psycopg2 (pip install -e ".[test]").
set -euo pipefail

cmd=${1:-}
DIR=${2:-${ARGENT_STACK_DIR:-.stack}}
PY=${PYTHON:-python}
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}

die() { echo "stack.sh: $*" >&2; exit 1; }
refused() { echo "stack.sh: $1 did not start on this machine; its log:" >&2; tail -n 30 "$2" >&2 || true; exit 77; }

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port_open() { "$PY" -c 'import socket,sys; s=socket.socket(); s.settimeout(1); sys.exit(s.connect_ex(("127.0.0.1", int(sys.argv[1]))))' "$1"; }
alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# initdb and postgres refuse to run as root: as root, the cluster belongs to the `postgres` user
# (made by Debian's package) and lives where that user can reach it, linked from DIR/postgres.
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

install() {
    [[ $(id -u) == 0 ]] || die "install needs root (apt-get)"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql
}

load_env() { [[ -f $DIR/stack.env ]] && . "$DIR/stack.env"; return 0; }

pg_data() {
    if [[ -L $DIR/postgres || -d $DIR/postgres ]]; then readlink -f "$DIR/postgres"; return; fi
    if [[ $(id -u) == 0 ]]; then
        local d; d=$(mktemp -d /var/tmp/argent-stack-pg.XXXXXX)
        chown postgres: "$d"; chmod 700 "$d"; ln -s "$d" "$DIR/postgres"; echo "$d"
    else
        mkdir -p "$DIR/postgres"; chmod 700 "$DIR/postgres"; readlink -f "$DIR/postgres"
    fi
}

pg_up() {
    [[ -x $PGBIN/initdb ]] || die "no PostgreSQL server binaries (looked in /usr/lib/postgresql/*/bin); run: sudo scripts/stack.sh install"
    local data; data=$(pg_data)
    if [[ ! -f $data/PG_VERSION ]]; then
        local pw; pw=$(as_pg mktemp); echo "$PG_PASSWORD" | as_pg tee "$pw" >/dev/null
        as_pg "$PGBIN/initdb" -D "$data" -U argent --pwfile="$pw" --auth=scram-sha-256 -E UTF8 --locale=C.UTF-8 \
            >"$DIR/logs/initdb.log" 2>&1 || { as_pg rm -f "$pw"; refused initdb "$DIR/logs/initdb.log"; }
        as_pg rm -f "$pw"
    fi
    if as_pg "$PGBIN/pg_ctl" -D "$data" status >/dev/null 2>&1 && port_open "$PG_PORT"; then return; fi
    # TCP on loopback only; the Unix socket lives in the data folder (never /var/run/postgresql).
    as_pg "$PGBIN/pg_ctl" -D "$data" -w -t 60 -l "$data/server.log" start \
        -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $data -c max_connections=200" >/dev/null 2>&1 \
        || { cp "$data/server.log" "$DIR/logs/postgres.log" 2>/dev/null || true; refused postgres "$DIR/logs/postgres.log"; }
    for db in optuna mlflow; do
        PGPASSWORD=$PG_PASSWORD "$PGBIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U argent -d postgres -tAq \
            -c "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1 \
            || PGPASSWORD=$PG_PASSWORD "$PGBIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U argent "$db"
    done
}

mlflow_up() {
    if alive "$DIR/mlflow.pid" && port_open "$MLFLOW_PORT"; then return; fi
    "$PY" -c "import mlflow, psycopg2" 2>/dev/null || die "$PY lacks mlflow or psycopg2: pip install -e '.[test]' (or set PYTHON)"
    mkdir -p "$DIR/artifacts"
    # setsid: the server outlives this shell; `down` stops its whole process group.
    MLFLOW_DISABLE_TELEMETRY=true setsid "$PY" -m mlflow server --host 127.0.0.1 --port "$MLFLOW_PORT" --workers 1 \
        --backend-store-uri "$PG_URI/mlflow" --artifacts-destination "$(readlink -f "$DIR/artifacts")" \
        >"$DIR/logs/mlflow.log" 2>&1 < /dev/null &
    echo $! > "$DIR/mlflow.pid"
    for _ in $(seq 120); do
        if "$PY" -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1] + '/health', timeout=2)" "$MLFLOW_URI" 2>/dev/null; then
            return
        fi
        alive "$DIR/mlflow.pid" || refused "mlflow server" "$DIR/logs/mlflow.log"
        sleep 1
    done
    refused "mlflow server (no answer on $MLFLOW_URI/health in 120 s)" "$DIR/logs/mlflow.log"
}

up() {
    mkdir -p "$DIR/logs"; chmod 700 "$DIR"
    load_env
    if [[ -z ${PG_PORT:-} ]]; then
        PG_PORT=$(free_port); MLFLOW_PORT=$(free_port)
        PG_PASSWORD=$("$PY" -c 'import secrets; print(secrets.token_hex(12))')
        PG_URI="postgresql://argent:$PG_PASSWORD@127.0.0.1:$PG_PORT"
        MLFLOW_URI="http://127.0.0.1:$MLFLOW_PORT"
        umask 077
        printf 'PG_PORT=%s\nMLFLOW_PORT=%s\nPG_PASSWORD=%s\nPG_URI=%s\nMLFLOW_URI=%s\nOPTUNA_STORAGE=%s\n' \
            "$PG_PORT" "$MLFLOW_PORT" "$PG_PASSWORD" "$PG_URI" "$MLFLOW_URI" "$PG_URI/optuna" > "$DIR/stack.env"
    fi
    pg_up
    mlflow_up
    cat <<EOF
stack up ($(readlink -f "$DIR"); settings in $DIR/stack.env). Put in your config:
  tracking: {uri: $MLFLOW_URI}
  tune: {storage: $PG_URI/optuna}
MLflow UI: $MLFLOW_URI    Stop: scripts/stack.sh down $DIR
EOF
}

status() {
    load_env
    [[ -n ${PG_PORT:-} ]] || { echo "no stack in $DIR"; return 1; }
    local rc=0
    if port_open "$PG_PORT"; then echo "postgres: up on 127.0.0.1:$PG_PORT"; else echo "postgres: down"; rc=1; fi
    if alive "$DIR/mlflow.pid" && port_open "$MLFLOW_PORT"; then echo "mlflow: up at $MLFLOW_URI"; else echo "mlflow: down"; rc=1; fi
    return $rc
}

down() {
    load_env
    if [[ -f $DIR/mlflow.pid ]]; then
        local pid; pid=$(cat "$DIR/mlflow.pid")
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
            kill -KILL -- "-$pid" 2>/dev/null || true
        fi
        rm -f "$DIR/mlflow.pid"
    fi
    if [[ -e $DIR/postgres ]]; then
        local data; data=$(readlink -f "$DIR/postgres")
        if [[ -f $data/postmaster.pid ]]; then
            as_pg "$PGBIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
        fi
    fi
    echo "stack down ($DIR)"
}

purge() {  # down, then delete the data (also the cluster kept outside DIR when run as root)
    down
    if [[ -L $DIR/postgres ]]; then rm -rf "$(readlink -f "$DIR/postgres")"; fi
    rm -rf "$DIR"
}

case $cmd in
    up) up ;;
    down) down ;;
    purge) purge ;;
    status) status ;;
    install) install ;;
    *) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; [[ $cmd == -h || $cmd == --help ]] ;;
esac
