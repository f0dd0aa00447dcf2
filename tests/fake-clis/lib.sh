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
