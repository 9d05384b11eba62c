#!/usr/bin/env bash
# `make demo`: the server and three stand-in agents in a tmux session "headspace-demo"; one asks
# a question, one has its hooks cut, one finishes. Everything lives under .headspace/demo, never
# in your own ~/.claude. `make demo-stop` ends it.
set -euo pipefail
cd "$(dirname "$0")/.."
session=headspace-demo
home=$PWD/.headspace/demo
claude=$home/claude
addr=${HEADSPACE_ADDR:-127.0.0.1:5055}
bin=$PWD/target/release

case "${1:-start}" in
start)
  if tmux has-session -t "$session" 2>/dev/null; then
    echo "the demo is already running: tmux attach -t $session (make demo-stop ends it)"; exit 0
  fi
  mkdir -p "$claude/projects" "$home/work"
  chmod 700 "$home"
  tmux new-session -d -s "$session" -n server -x 200 -y 50 \
    "$bin/headspace serve --home $home --claude-dir $claude --addr $addr; echo 'server stopped'; sleep 5"
  for _ in $(seq 1 100); do
    curl -sf "http://$addr/healthz" >/dev/null 2>&1 && break
    sleep 0.3
  done
  curl -sf "http://$addr/healthz" >/dev/null || { echo "the server did not start; see: tmux attach -t $session"; exit 1; }
  "$bin/headspace" hooks install --transport command --settings "$claude/settings.json" --url "http://$addr" \
    --token-file "$home/token" >/dev/null
  cd "$home/work"
  agent="$bin/headspace-agent --claude-dir $claude --stay --auto --think-ms 2500"
  tmux new-window -t "$session" -n agents "$agent --script $OLDPWD/demo/asks.json --wait-on-questions"
  tmux split-window -t "$session:agents" "$agent --script $OLDPWD/demo/cut.json --drop-events UserPromptSubmit,Stop,PreToolUse,PostToolUse"
  tmux split-window -t "$session:agents" "$agent --script $OLDPWD/demo/finishes.json"
  tmux select-layout -t "$session:agents" even-vertical
  echo "Headspace demo running."
  echo "  dashboard:   http://$addr/login?token=$(cat "$home/token")"
  echo "  the agents:  tmux attach -t $session   (window 'agents'; answer the question in the top pane)"
  echo "  agents list: HEADSPACE_HOME=$home $bin/headspace agents --addr $addr"
  echo "  stop it:     make demo-stop"
  ;;
stop)
  if tmux has-session -t "$session" 2>/dev/null; then
    tmux send-keys -t "$session:server" C-c
    for _ in $(seq 1 50); do
      curl -sf "http://$addr/healthz" >/dev/null 2>&1 || break
      sleep 0.2
    done
    tmux kill-session -t "$session"
    echo "demo stopped"
  else
    echo "no demo running"
  fi
  ;;
esac
