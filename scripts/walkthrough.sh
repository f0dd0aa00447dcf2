#!/usr/bin/env bash
# A tour of liza in a throw-away repository: init, notes, a hand edit recorded as such, a
# broken hand edit refused and repaired, then a task's whole lifecycle with real git
# worktrees — the planner's gates, a claim, a refused dirty submit, a rejection citing
# path:line, the rework and the approval — as a supervisor and its agents would drive it;
# then the merge into the integration branch with its integration test, a second task whose
# merge conflicts, its integration fix by another coder, and `liza gc`.
# Until `liza demo` exists, this is the most complete real workflow.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cargo build --quiet --manifest-path "$root/Cargo.toml"
liza="$root/target/debug/liza"
dir="$(mktemp -d "${TMPDIR:-/tmp}/liza-walkthrough.XXXXXX")"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

cd "$dir"
git init -q -b main
mkdir specs scripts && printf '# Vision\n\nA report CLI with a --json flag.\n' > specs/vision.md
printf '#!/bin/sh\n# The integration test: every merge candidate must keep report.txt well-formed.\n! grep -q "<<<<<<<" report.txt 2>/dev/null\n' > scripts/integration-test.sh
chmod +x scripts/integration-test.sh
git add scripts/integration-test.sh
git -c user.name=walkthrough -c user.email=walkthrough@example.com commit -q -m start

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

step "liza register coder-2; liza add-task totals ...; coder-2 claims it from the same base"
coder2_gen="$("$liza" register coder-2)"
as_coder2() { LIZA_AGENT_ID=coder-2 LIZA_AGENT_GENERATION="$coder2_gen" "$liza" "$@"; }
"$liza" add-task --id totals --desc "Print the totals line" --spec specs/vision.md \
  --done "report prints a totals line" --scope "the report printer" --finalize
"$liza" claim-task totals coder-2
printf 'totals: 1\n' > .worktrees/totals/report.txt
git -C .worktrees/totals add -A && git -C .worktrees/totals commit -q -m "Totals line"
as_coder2 submit-for-review totals
"$liza" claim-review totals code-reviewer-1
as_reviewer submit-verdict totals approve --commit "$(git -C .worktrees/totals rev-parse HEAD)"

step "liza merge parse-flag   # what the reviewer's supervisor does after approval"
"$liza" merge parse-flag
git log --oneline integration

step "liza merge totals   # both changed report.txt: INTEGRATION_FAILED, nothing published"
"$liza" merge totals || echo "(exit $? — the task is INTEGRATION_FAILED, its worktree kept)"

step "liza claim-task totals coder-1   # any coder fixes it; the integration tip is merged in"
"$liza" claim-task totals coder-1
cat .worktrees/totals/report.txt
printf 'json: {"totals": 1}\ntotals: 1\n' > .worktrees/totals/report.txt
git -C .worktrees/totals commit -q -am "Keep both lines"
as_coder submit-for-review totals
"$liza" claim-review totals code-reviewer-1
as_reviewer submit-verdict totals approve --commit "$(git -C .worktrees/totals rev-parse HEAD)"
"$liza" merge totals
git log --oneline --graph integration
git show integration:report.txt

step liza show totals
"$liza" show totals

step "liza gc   # nothing is left behind"
"$liza" gc

step liza log
"$liza" log

printf '\nThe repository is in %s (look at .liza/state.yaml, .liza/log.yaml, .liza/journal/,\nthe integration test logs .liza/integration-test-*.log, and git log integration).\n' "$dir"
