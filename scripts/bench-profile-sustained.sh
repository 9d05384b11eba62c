#!/usr/bin/env bash
# Where the time goes while hooks flood the server over Claude Code's HTTP shape (the HTTP
# sustained phase of server_bench), on a durable throwaway cluster. One of, per run (each
# disturbs what the other measures):
#   scripts/bench-profile-sustained.sh cpu         a system-wide CPU profile by process
#                                                  (`perf record -a -F 499` for 5 s)
#   scripts/bench-profile-sustained.sh statements  PostgreSQL's active statements, sampled
#                                                  from pg_stat_activity every 50 ms (count)
# The figures of docs/benchmarks.md ("The same three goals over Claude Code's HTTP hooks")
# come from it. Needs perf (for cpu) and the release binaries
# (cargo build --release -p headspace --bins --examples).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
case "$mode" in cpu | statements) ;; *) echo "usage: $0 cpu|statements" >&2; exit 2 ;; esac
[ "$mode" = statements ] || command -v perf >/dev/null || { echo "$0: needs perf (linux-perf)" >&2; exit 2; }
target=${CARGO_TARGET_DIR:-target}
MODE=$mode TARGET=$target scripts/with-test-postgres.sh --durable bash -c '
  set -euo pipefail
  out=$(mktemp); samples=$(mktemp); data=$(mktemp)
  "$TARGET/release/examples/server_bench" > "$out" 2>&1 &
  pid=$!
  # The HTTP sustained phase starts once the command-hook one is printed (and drained).
  until grep -q "highest sustained, command hooks" "$out"; do
    kill -0 $pid 2>/dev/null || { cat "$out"; exit 1; }; sleep 0.2
  done
  sleep 1.5
  db=${DATABASE_URL/dbname=postgres/dbname=bench}
  if [ "$MODE" = cpu ]; then
    perf record -a -F 499 -o "$data" -- sleep 5 2>/dev/null
  else
    for _ in $(seq 1 80); do
      psql "$db" -At -c "SELECT left(regexp_replace(query, '\''\s+'\'', '\'' '\'', '\''g'\''), 120)
        FROM pg_stat_activity WHERE state = '\''active'\'' AND backend_type = '\''client backend'\''
        AND pid <> pg_backend_pid()" 2>/dev/null || true
      sleep 0.05
    done > "$samples"
  fi
  until grep -q "highest sustained, HTTP hooks" "$out"; do sleep 0.2; done
  grep "highest sustained, HTTP hooks" "$out"
  if [ "$MODE" = cpu ]; then
    echo "CPU by process (share of all samples):"
    perf report -i "$data" --sort comm --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" | head -8
  else
    echo "active statements (samples):"
    sort "$samples" | uniq -c | sort -rn | head -8
  fi
  wait $pid || true
  rm -f "$out" "$samples" "$data"
'
