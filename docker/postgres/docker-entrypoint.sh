#!/bin/sh
# The official postgres image's contract, as compose's `shared` profile uses it: on the first
# start (an empty data directory, the volume), initdb with POSTGRES_USER as the superuser and
# POSTGRES_PASSWORD as its password, create POSTGRES_DB, and accept password connections
# (scram-sha-256) from any address; every start: serve on 0.0.0.0:5432 as the postgres user.
# Later starts keep the volume as it is: changing POSTGRES_PASSWORD then changes nothing.
set -eu
PGDATA=${PGDATA:-/var/lib/postgresql/data}
export PGDATA

# `docker run IMAGE -c key=value`: options for the server, as with the official image.
if [ "${1#-}" != "$1" ]; then
    set -- postgres "$@"
fi
if [ "$1" != postgres ]; then
    exec "$@"
fi
shift

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        echo "docker-entrypoint: POSTGRES_PASSWORD is not set (needed on the first start, to initialise $PGDATA)" >&2
        exit 1
    fi
    user=${POSTGRES_USER:-postgres}
    db=${POSTGRES_DB:-$user}
    init=$(mktemp -d)
    # The password through a file, never on a command line (`ps` shows those).
    printf '%s\n' "$POSTGRES_PASSWORD" > "$init/pwfile"
    initdb -D "$PGDATA" -U "$user" --pwfile="$init/pwfile" -E UTF8 --locale=C.UTF-8 \
        --auth-local=trust --auth-host=scram-sha-256
    rm -f "$init/pwfile"
    printf '\n# Any address: the server is reachable on the compose network only.\nhost all all all scram-sha-256\n' \
        >> "$PGDATA/pg_hba.conf"
    # The database, on a server nobody else can reach yet (no TCP, a private socket): a health
    # check must not find it ready before POSTGRES_DB exists.
    pg_ctl -D "$PGDATA" -w -o "-c listen_addresses='' -c unix_socket_directories=$init" start
    if [ "$db" != postgres ]; then
        printf 'CREATE DATABASE :"db";\n' | psql -q -v ON_ERROR_STOP=1 -v db="$db" -h "$init" -U "$user" -d postgres
    fi
    pg_ctl -D "$PGDATA" -m fast -w stop
    rmdir "$init"
    echo "docker-entrypoint: initialised $PGDATA (user $user, database $db)"
fi

exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
