#!/usr/bin/env bash
# A tour of liza in a throw-away repository: init, notes, a hand edit recorded as such, a
# broken hand edit refused and repaired, then a task's whole lifecycle with real git
# worktrees — the planner's gates, a claim, a refused dirty submit, a rejection citing
# path:line, the rework and the approval — as a supervisor and its agents would drive it.
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

export GIT_AUTHOR_NAME=coder GIT_AUTHOR_EMAIL=coder@example.com
export GIT_COMMITTER_NAME=coder GIT_COMMITTER_EMAIL=coder@example.com

step liza finalize-task parse-flag   # refused by the planner's gates
"$liza" finalize-task parse-flag || echo "(exit $? — nothing was written)"

step liza amend-task parse-flag --spec specs/vision.md --done "report --json prints a totals key" --scope "the option parser"
"$liza" amend-task parse-flag --spec specs/vision.md --done "report --json prints a totals key" --scope "the option parser"
"$liza" finalize-task parse-flag

step "liza register coder-1; liza register code-reviewer-1   # what liza-agent does at start"
coder_gen="$("$liza" register coder-1)"
reviewer_gen="$("$liza" register code-reviewer-1)"
echo "coder-1 generation $coder_gen, code-reviewer-1 generation $reviewer_gen"

step liza claim-task parse-flag coder-1
"$liza" claim-task parse-flag coder-1
git worktree list

as_coder() { LIZA_AGENT_ID=coder-1 LIZA_AGENT_GENERATION="$coder_gen" "$liza" "$@"; }
as_reviewer() { LIZA_AGENT_ID=code-reviewer-1 LIZA_AGENT_GENERATION="$reviewer_gen" "$liza" "$@"; }

step "cd .worktrees/parse-flag; write report.txt; liza submit-for-review parse-flag   # dirty: refused"
cd .worktrees/parse-flag
printf 'json: todo\n' > report.txt
as_coder submit-for-review parse-flag || echo "(exit $? — commit first)"
git add -A && git commit -q -m "Parse --json"
as_coder submit-for-review parse-flag
cd "$dir"

step "liza claim-review parse-flag code-reviewer-1; reject citing path:line"
"$liza" claim-review parse-flag code-reviewer-1
head="$(git -C .worktrees/parse-flag rev-parse HEAD)"
as_reviewer submit-verdict parse-flag reject --commit "$head" --reason "report.txt:1 still says todo"

step "the same coder re-claims, fixes, submits; the reviewer approves"
"$liza" claim-task parse-flag coder-1
printf 'json: {"totals": 1}\n' > .worktrees/parse-flag/report.txt
git -C .worktrees/parse-flag commit -q -am "Print totals"
as_coder submit-for-review parse-flag
"$liza" claim-review parse-flag code-reviewer-1
head="$(git -C .worktrees/parse-flag rev-parse HEAD)"
as_reviewer submit-verdict parse-flag approve --commit "$head"

step liza show parse-flag
"$liza" show parse-flag

step liza log
"$liza" log

printf '\nThe repository is in %s (look at .liza/state.yaml, .liza/log.yaml, .liza/journal/).\n' "$dir"
