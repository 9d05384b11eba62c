#!/usr/bin/env bash
# Where PostgreSQL's time goes in one phase of a benchmark, on a durable throwaway cluster
# with pg_stat_statements loaded: the statements that took the most time, their calls, rows
# and buffers read.
#   scripts/bench-statements.sh 100mb    the 100 MB transcript appended at once (server_bench)
#   scripts/bench-statements.sh agents   1,000 agents through the real server (scale_bench)
# Expects the release binaries built (cargo build --release -p headspace --bins --examples).
set -euo pipefail
cd "$(dirname "$0")/.."
phase=${1:-}
case "$phase" in 100mb | agents) ;; *) echo "usage: $0 100mb|agents" >&2; exit 2 ;; esac
target=${CARGO_TARGET_DIR:-target}
export PG_EXTRA_SETTINGS="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"
PHASE=$phase TARGET=$target scripts/with-test-postgres.sh --durable bash -c '
  set -euo pipefail
  psql "$DATABASE_URL" -q -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"
  out=$(mktemp)
  if [ "$PHASE" = 100mb ]; then
    "$TARGET/release/examples/server_bench" > "$out" 2>&1 &
    pid=$!
    until grep -q "transcript append" "$out"; do kill -0 $pid 2>/dev/null || { cat "$out"; exit 1; }; sleep 0.2; done
    psql "$DATABASE_URL" -Atc "SELECT pg_stat_statements_reset()" > /dev/null
    until grep -q "MB transcript appended" "$out"; do sleep 0.05; done
    grep "MB transcript appended" "$out"
  else
    cargo test --release -p headspace --test scale_bench -- --ignored --nocapture a_thousand_agents 2>&1 | grep "^1,000 agents"
  fi
  psql "$DATABASE_URL" -c "SELECT round(total_exec_time::numeric) AS ms, calls, rows,
      round(mean_exec_time::numeric, 2) AS mean_ms, shared_blks_hit + shared_blks_read AS buffers,
      round(wal_bytes / 1e6, 1) AS wal_mb, left(regexp_replace(query, '\''\s+'\'', '\'' '\'', '\''g'\''), 140) AS query
    FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 15"
  if [ "$PHASE" = 100mb ]; then wait; fi
  rm -f "$out"
'
