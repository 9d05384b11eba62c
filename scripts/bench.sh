#!/usr/bin/env bash
# `make bench`: every benchmark in one run, then one table `measure | measured | goal | met`.
# The server figures and their baselines run on one cluster with the embedded database's
# settings (fsync and synchronous_commit on): scripts/with-test-postgres.sh --durable.
# Expects the release binaries and examples built (the Makefile builds them first).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
cargo=${CARGO:-cargo}

BENCH_TABLE=$(mktemp /tmp/headspace-bench-table.XXXXXX)
export BENCH_TABLE
trap 'rm -f "$BENCH_TABLE"' EXIT

"$target/release/examples/replay_bench"
"$target/release/examples/capture_bench"
scripts/with-test-postgres.sh --durable bash -c "
  set -euo pipefail
  '$target/release/examples/server_bench'
  '$target/release/examples/ingest_bench'
  '$target/release/examples/search_bench'
  '$target/release/examples/turn_insert_bench'
  '$target/release/examples/cluster_bench'
  $cargo test --release -p headspace --test scale_bench -- --ignored --nocapture --test-threads=1
  $cargo test --release -p headspace --test real_claude -- --ignored --nocapture --test-threads=1
"

echo
echo "make bench: figures on this machine ($(nproc) cores), durable cluster"
awk -F'\t' 'BEGIN { printf "| %s | %s | %s | %s |\n|---|---|---|---|\n", "measure", "measured", "goal", "met" }
  { printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }' "$BENCH_TABLE"
