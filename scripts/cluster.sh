#!/usr/bin/env bash
# `make cluster`: several machines on one, for trying them and for seeing them work. On the
# shared PostgreSQL of $DATABASE_URL (make cluster starts one with scripts/with-test-postgres.sh):
# two edges, "edge-a" and "edge-b", each with its own claude directory, tmux socket and two
# stand-in agents, and two hubs serving the one dashboard. Everything lives under
# .headspace/cluster; Ctrl-C stops it all.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DATABASE_URL:?run it through make cluster (or give DATABASE_URL)}"
root=$PWD
home=$root/.headspace/cluster
bin=${HEADSPACE_BIN:-$root/target/release}
hubs=(127.0.0.1:${HUB1_PORT:-5061} 127.0.0.1:${HUB2_PORT:-5062})
pids=()

cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for m in a b; do tmux -L "hs-edge-$m" kill-server 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "cluster stopped"
}
trap cleanup EXIT INT TERM

healthy() {
  for _ in $(seq 1 100); do
    curl -sf "http://$1/healthz" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "the server on $1 did not start; its log: $2" >&2
  exit 1
}

rm -rf "$home"
mkdir -p "$home"
chmod 700 "$home"
# The hubs first: each has a home of its own, so a key of its own (pane-key.pub), which every
# edge must trust to run the commands the hub forwards (docs/multi-machine.md).
for addr in "${hubs[@]}"; do
  hub_home=$home/hub-${addr##*:}
  "$bin/headspace" serve --role hub --database-url "$DATABASE_URL" --addr "$addr" \
    --home "$hub_home" >"$hub_home.log" 2>&1 &
  pids+=($!)
  healthy "$addr" "$hub_home.log"
  echo "hub: dashboard at http://$addr/login?token=$(cat "$hub_home/token")"
done
port=5071
for m in a b; do
  dir=$home/edge-$m
  mkdir -p "$dir/claude/projects" "$dir/work"
  chmod 700 "$dir"
  for addr in "${hubs[@]}"; do cat "$home/hub-${addr##*:}/pane-key.pub"; done >"$dir/trusted-pane-keys"
  addr=127.0.0.1:$port
  port=$((port + 1))
  "$bin/headspace" serve --role edge --machine "edge-$m" --database-url "$DATABASE_URL" \
    --claude-dir "$dir/claude" --home "$dir" --tmux-socket "hs-edge-$m" --addr "$addr" \
    >"$dir/edge.log" 2>&1 &
  pids+=($!)
  healthy "$addr" "$dir/edge.log"
  "$bin/headspace" hooks install --transport command --settings "$dir/claude/settings.json" --url "http://$addr" \
    --token-file "$dir/token" >/dev/null
  agent="$bin/headspace-agent --claude-dir $dir/claude --stay --auto --think-ms 3000"
  tmux -L "hs-edge-$m" new-session -d -s agents -x 160 -y 40 -c "$dir/work" \
    "$agent --script $root/demo/finishes.json"
  tmux -L "hs-edge-$m" split-window -t agents -c "$dir/work" \
    "$agent --script $root/demo/asks.json --wait-on-questions"
  echo "edge-$m: hooks on http://$addr, agents in: tmux -L hs-edge-$m attach -t agents"
done
echo "machines: HEADSPACE_TOKEN_FILE=$home/hub-${hubs[0]##*:}/token $bin/headspace machines --addr ${hubs[0]}   (logs under $home; Ctrl-C stops it all)"
wait
