#!/usr/bin/env bash
# What a pg_trgm GIN index costs an insert (migrations/0016_exact_off_commit.sql), on a
# durable throwaway cluster: 16,355 turn-sized rows (as many as the 100 MB bench's turns)
# inserted with one INSERT … SELECT, twice, into a table with the trigram index, the same
# with a 64 MB GIN pending list, and without it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/with-test-postgres.sh --durable bash -c '
  set -euo pipefail
  psql "$DATABASE_URL" -q -c "CREATE EXTENSION pg_trgm"
  ins() { echo "INSERT INTO $1 (id, text) SELECT g, '\''step of big task '\'' || g || '\'': '\'' || repeat('\''reading the sources '\'', 8) FROM generate_series($2, $2 + 16354) g"; }
  psql "$DATABASE_URL" -q -c "
    CREATE TABLE with_trigrams (id bigint PRIMARY KEY, text text);
    CREATE INDEX ON with_trigrams USING gin (text gin_trgm_ops);
    CREATE TABLE with_long_pending_list (id bigint PRIMARY KEY, text text);
    CREATE INDEX ON with_long_pending_list USING gin (text gin_trgm_ops) WITH (gin_pending_list_limit = 65536);
    CREATE TABLE without_trigrams (id bigint PRIMARY KEY, text text);"
  for t in with_trigrams with_long_pending_list without_trigrams; do
    for start in 1 20000; do
      printf "%-24s " "$t"; psql "$DATABASE_URL" -q -c "\\timing on" -c "$(ins $t $start)" | grep Time
    done
  done
'
