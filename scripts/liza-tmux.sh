#!/bin/sh
# The layout `liza up` creates, in plain shell, for people who prefer to customise it:
# one tmux window, a pane per agent (its id as the pane title) and one with the live
# status. Run it from the project's repository; stop with `liza up --down --session NAME`
# (or Ctrl-C in each pane, then `tmux kill-session -t NAME`).
#   scripts/liza-tmux.sh [SESSION] [CODERS] [REVIEWERS]
set -eu
session=${1:-liza-$(basename "$PWD" | tr -c 'A-Za-z0-9_\n-' '-')}
coders=${2:-2}
reviewers=${3:-1}
liza=$(command -v liza || echo "$PWD/target/release/liza")
agent=$(dirname "$liza")/liza-agent

# The status pane first: window options hold before any agent starts.
status=$(tmux new-session -d -P -F '#{pane_id}' -s "$session" -n liza -x 200 -y 50 -- "$liza" status --watch)
tmux select-pane -t "$status" -T status
tmux set-option -w -t "$status" remain-on-exit on
tmux set-option -w -t "$status" pane-border-status top
tmux set-option -w -t "$status" pane-border-format ' #{pane_title} '

pane() { # role id: a pane before the status pane running that agent
  p=$(tmux split-window -b -d -P -F '#{pane_id}' -t "$status" -e "LIZA_AGENT_ID=$2" -- "$agent" "$1")
  tmux select-pane -t "$p" -T "$2"
  tmux select-layout -t "$status" tiled
}

pane planner planner-1
i=1; while [ "$i" -le "$coders" ]; do pane coder "coder-$i"; i=$((i + 1)); done
i=1; while [ "$i" -le "$reviewers" ]; do pane code-reviewer "code-reviewer-$i"; i=$((i + 1)); done
echo "tmux session $session; attach with: tmux attach -t $session"
