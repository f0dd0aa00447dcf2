#!/usr/bin/env bash
# A tour of the blackboard core in a throw-away repository: init, notes, status, show,
# log, validate, a hand edit recorded as such, a broken hand edit refused and repaired.
# Until `liza demo` exists, this is the most complete real workflow.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cargo build --quiet --manifest-path "$root/Cargo.toml"
liza="$root/target/debug/liza"
dir="$(mktemp -d "${TMPDIR:-/tmp}/liza-walkthrough.XXXXXX")"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

cd "$dir"
git init -q -b main
git -c user.name=walkthrough -c user.email=walkthrough@example.com commit -q --allow-empty -m start
mkdir specs && printf '# Vision\n\nA report CLI with a --json flag.\n' > specs/vision.md

step liza init "Add a --json flag to the report CLI"
"$liza" init "Add a --json flag to the report CLI"

step liza note all "Prefer serde_json over hand-written JSON"
"$liza" note all "Prefer serde_json over hand-written JSON"

step "edit .liza/state.yaml by hand: add a task"
{
  sed -n '/^tasks: \[\]$/q;p' .liza/state.yaml
  printf 'tasks:\n  - id: parse-flag\n    description: Parse the --json flag\n    status: DRAFT\n'
  sed '1,/^tasks: \[\]$/d' .liza/state.yaml
} > .liza/state.yaml.edited
mv .liza/state.yaml.edited .liza/state.yaml

step liza note parse-flag "Start with the option parser"
"$liza" note parse-flag "Start with the option parser"

step liza status
"$liza" status

step liza show parse-flag
"$liza" show parse-flag

step "sed -i 's/status: DRAFT/status: FINISHED/' .liza/state.yaml   # a broken hand edit"
sed -i 's/status: DRAFT/status: FINISHED/' .liza/state.yaml

step liza note all "this is refused: the blackboard is invalid"
"$liza" note all "this is refused" || echo "(exit $? — nothing was written)"

step liza validate
"$liza" validate || true

step "sed -i 's/status: FINISHED/status: DRAFT/' .liza/state.yaml   # fixed"
sed -i 's/status: FINISHED/status: DRAFT/' .liza/state.yaml
"$liza" validate

step liza log
"$liza" log

printf '\nThe repository is in %s (look at .liza/state.yaml, .liza/log.yaml, .liza/journal/).\n' "$dir"
