#!/usr/bin/env bash
# Runs a command with DATABASE_URL pointing at a throwaway PostgreSQL cluster: initdb in a
# temp dir, Unix socket only (no TCP port), stopped and removed on exit. As root, the
# cluster's processes run as the unprivileged `postgres` user, since initdb refuses root.
#
# `--durable` first: the cluster runs with the embedded database's settings instead (fsync and
# synchronous_commit on, as initdb leaves them; 100 connections), so that benchmarks measure
# what a durable commit costs. Without it, fsync is off: tests need no durability.
set -euo pipefail

durable=0
if [ "${1:-}" = "--durable" ]; then
  durable=1
  shift
fi

pg_bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
  echo "with-test-postgres: PostgreSQL server binaries not found (install the postgresql package)" >&2
  exit 1
fi

dir=$(mktemp -d /tmp/headspace-test-pg.XXXXXX)
as_owner=()
if [ "$(id -u)" = 0 ]; then
  chown postgres: "$dir"
  as_owner=(runuser -u postgres --)
fi

cleanup() {
  "${as_owner[@]}" "$pg_bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

if [ "$durable" = 1 ]; then
  # As shell/src/server/embedded_pg starts its cluster: PostgreSQL's own defaults otherwise.
  settings="-c listen_addresses='' -k $dir -c max_connections=100"
  sync_flag=()
else
  settings="-c listen_addresses='' -k $dir -c fsync=off -c max_connections=200"
  sync_flag=(--no-sync)
fi
# PG_EXTRA_SETTINGS: more server settings, for experiments (e.g. pg_stat_statements).
settings="$settings ${PG_EXTRA_SETTINGS:-}"
"${as_owner[@]}" "$pg_bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 "${sync_flag[@]}" >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }
"${as_owner[@]}" "$pg_bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
  -o "$settings" start >/dev/null \
  || { cat "$dir/server.log" >&2; exit 1; }

export PG_TEST_DIR=$dir
export PG_BIN=$pg_bin
export DATABASE_URL="host=$dir user=postgres dbname=postgres"
if [ "$durable" = 1 ]; then
  echo "with-test-postgres: PostgreSQL running on socket $dir (durable: fsync and synchronous_commit on)" >&2
else
  echo "with-test-postgres: PostgreSQL running on socket $dir" >&2
fi
"$@"
