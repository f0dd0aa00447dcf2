#!/bin/sh
# A fake agent CLI for liza's end-to-end tests, registered as a user backend
# (config.agent_tools), so tests exercise the real backend path.
#
# It reads its prompt on stdin, works out what this run is about (LIZA_TASK_ID, or the
# planner's "WOKEN FOR:" trigger), counts its runs per (agent, key), and sources the step
# script $FAKE_AGENT_DIR/<role>/<key>.<n>.sh, else <key>.sh, else default.sh (none: exit 0).
# Step scripts use the helpers below and the real `liza` on PATH (the supervisor puts its
# own directory first).
set -u
# The arguments, logged below (argv.log) once the scenario directory is known.
argv="$*"
# The codex backend's run report file (--output-last-message), when liza asks for one.
report_file=""
while [ $# -gt 0 ]; do
  [ "$1" = --output-last-message ] && report_file="${2:-}"
  shift
done
dir="${FAKE_AGENT_DIR:?FAKE_AGENT_DIR must name the scenario directory}"
role="${LIZA_ROLE:?}"
prompt="$(cat)"
key="${LIZA_TASK_ID:-}"
if [ -z "$key" ]; then
  key=$(printf '%s\n' "$prompt" | sed -n 's/^WOKEN FOR: \([A-Z_]*\).*/\1/p' | head -n 1)
fi
mkdir -p "$dir/runs"
printf '%s\n' "$argv" >> "$dir/argv.log"
count_file="$dir/runs/$LIZA_AGENT_ID.$key"
n=$(( $(cat "$count_file" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$count_file"
echo "$role $LIZA_AGENT_ID $key $n" >> "$dir/runs.log"
wt="${LIZA_WORKTREE:-.}"

# Write FILE with TEXT in the worktree and commit it.
work() {
  mkdir -p "$(dirname "$wt/$1")"
  printf '%s\n' "$2" > "$wt/$1"
  git -C "$wt" add -A && git -C "$wt" commit -q -m "${3:-work on $key}"
}
head_commit() { git -C "$wt" rev-parse HEAD; }
submit() { liza submit-for-review "$key"; }
approve() { liza submit-verdict "$key" approve --commit "$(head_commit)"; }
reject() { liza submit-verdict "$key" reject --commit "$(head_commit)" --reason "$1"; }
block() { liza block "$key" --reason "$1" --question "$2"; }
handoff() { liza handoff "$key" --summary "$1" --next-action "$2"; exit 42; }
hang() { sleep "${1:-3600}"; }
# Write TEXT as the run report liza asked for (the codex backend's final message).
report() { printf '%s\n' "$1" > "${report_file:?liza asked for no run report}"; }
crash() { exit "${1:-3}"; }
flood() { i=0; while [ "$i" -lt "${1:-100000}" ]; do echo "flood line $i of fake output"; i=$((i + 1)); done; }
orphan() { (sleep "${1:-3600}" &) ; }
task() {
  id="$1"; shift
  liza add-task --id "$id" --desc "Implement $id" --spec specs/vision.md \
    --done "$id.txt holds the text of $id" --scope "$id.txt" --finalize "$@"
}

script="$dir/$role/$key.$n.sh"
[ -f "$script" ] || script="$dir/$role/$key.sh"
[ -f "$script" ] || script="$dir/$role/default.sh"
[ -f "$script" ] || exit 0
. "$script"
