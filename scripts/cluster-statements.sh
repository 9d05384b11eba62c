#!/usr/bin/env bash
# Where PostgreSQL's time goes under the cluster bench's steady load: runs the steady phase
# alone (10 edges × 100 agents, 2 hubs) on a durable throwaway cluster with
# pg_stat_statements loaded, then prints the statements that took the most time.
# Expects the release binaries and examples built (cargo build --release -p headspace --bins --examples).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
export PG_EXTRA_SETTINGS="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"
CLUSTER_BENCH_STEADY_ONLY=1 scripts/with-test-postgres.sh --durable bash -c "
  set -euo pipefail
  '$target/release/examples/cluster_bench'
  psql \"\$DATABASE_URL\" -q -c 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements'
  psql \"\$DATABASE_URL\" -c \"SELECT round(total_exec_time::numeric) AS ms, calls,
      round(mean_exec_time::numeric, 2) AS mean_ms, round(wal_bytes / 1e6, 1) AS wal_mb,
      left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS query
    FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 25\"
"
