# Shared by the fake agent CLIs in this directory. Each fake reproduces the observable
# behaviour of one real CLI, recorded from the release named in its header by running it
# (scripts/e2e-real-clis; fixtures in tests/fixtures/clis/): the flags its parser accepts
# (anything else is refused with the real message and exit status), the variables it
# authenticates with (none: the real failure), how it takes the prompt, and what it
# leaves in its working directory. The work itself is the fake agent's step scripts
# (tests/fake-agent/agent.sh), run with the prompt on stdin, as the model would drive
# the real CLI's shell tool.
set -u
fake_dir="$(cd "$(dirname "$0")" && pwd)"
agent_sh="$fake_dir/../fake-agent/agent.sh"

# One line per run in $FAKE_AGENT_DIR/clis.log: the CLI, its argv, the prompt's size.
fake_log() {
  printf '%s\t%s\tprompt_bytes=%s\n' "$1" "$2" "$3" >> "${FAKE_AGENT_DIR:?}/clis.log"
}

# Whether any of the named variables is set and non-empty.
any_set() {
  for v in "$@"; do
    eval "val=\${$v:-}"
    [ -n "$val" ] && return 0
  done
  return 1
}

# Runs the scenario's step script with the prompt (a file) on stdin, with PATH as given.
run_agent() {
  prompt_file="$1"
  agent_path="$2"
  PATH="$agent_path" sh "$agent_sh" < "$prompt_file"
}

# A PATH without the directory that holds `liza` (a login shell rebuilding PATH, or a
# CLI that runs no commands): the system's directories only.
system_path() {
  echo "/usr/local/bin:/usr/bin:/bin"
}

# --- Usage, as each real CLI reports it (tests/fixtures/clis/usage/README.md) ---
# The fake provider serves every model call FAKE_USAGE tokens: "<input> <output> <cache
# read> <cache write>" — input in the ledger's sense (neither read from nor written to the
# cache), `-` for a count the provider's API does not have. Each fake reports them the way
# its real CLI does (its own sums, its own meaning of "input"), and logs every call it
# was served in $FAKE_AGENT_DIR/served.log as "<cli> <input> <output> <cache read>
# <cache write>", so a test can hold the ledger to what was served.
usage_of() {
  set -- ${FAKE_USAGE:-$1}
  u_in=$1 u_out=$2 u_cr=$3 u_cw=$4
}
served() {
  printf '%s %s %s %s %s\n' "$1" "$u_in" "$u_out" "$u_cr" "$u_cw" >> "${FAKE_AGENT_DIR:?}/served.log"
}
# A count for a JSON report: `-` (the API has no such count) as 0.
n() { [ "$1" = - ] && echo 0 || echo "$1"; }

# One line of TEXT escaped for a JSON string (quotes and backslashes escaped, control
# characters dropped), and as a JSON string.
json_esc() {
  printf '%s' "$1" | tr -d '\000-\010\012-\037' | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/	/\\t/g'
}
json_str() { printf '"%s"' "$(json_esc "$1")"; }

# Runs the step script like run_agent, each line it prints handed to the function $3
# as it comes (a JSON CLI's event per line); returns the script's status.
run_agent_events() {
  rc_file="$(mktemp)"
  { run_agent "$1" "$2"; echo $? > "$rc_file"; } | while IFS= read -r line; do "$3" "$line"; done
  rc="$(cat "$rc_file")"; rm -f "$rc_file"
  return "${rc:-1}"
}
