//! `liza validate FILE`: every check of specs/blackboard.md *Validation* broken on its own by a
//! fixture derived from a valid mid-sprint blackboard, with the finding's rule, check,
//! path and line; and the valid fixtures accepted.

use std::path::Path;

use crate::common::{LIZA, MID_SPRINT, MID_SPRINT_WORKTREES, assert_exit, json, stdout};

const BASH_STYLE: &str = include_str!("../fixtures/bash-style.yaml");

/// A project directory (not a git repository) holding `.liza/state.yaml`.
fn project(state: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".liza")).unwrap();
    std::fs::create_dir_all(dir.path().join("specs")).unwrap();
    std::fs::write(dir.path().join("specs/vision.md"), "# Vision\n").unwrap();
    for wt in MID_SPRINT_WORKTREES {
        std::fs::create_dir_all(dir.path().join(".worktrees").join(wt)).unwrap();
    }
    std::fs::create_dir_all(dir.path().join(".worktrees/render-json")).unwrap();
    std::fs::write(dir.path().join(".liza/state.yaml"), state).unwrap();
    dir
}

fn validate(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = std::process::Command::new(LIZA);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    for (k, v) in env {
        cmd.env(k, v);
    }
    // Run from a directory that is not a repository: FILE needs no git.
    cmd.current_dir(dir.join("specs"))
        .args(["--json", "validate"])
        .arg(dir.join(".liza/state.yaml"))
        .args(extra)
        .output()
        .unwrap()
}

fn findings(out: &std::process::Output) -> Vec<serde_json::Value> {
    json(out)["result"]["findings"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Applies `(old, new)` replacements, each of which must match exactly once.
fn edit(base: &str, edits: &[(&str, &str)]) -> String {
    let mut text = base.to_owned();
    for (old, new) in edits {
        assert_eq!(
            text.matches(old).count(),
            1,
            "fixture edit {old:?} must match exactly once"
        );
        text = text.replacen(old, new, 1);
    }
    text
}

/// Replaces the whole top-level block `key:` with `replacement`.
fn replace_section(base: &str, key: &str, replacement: &str) -> String {
    let start = base.find(&format!("\n{key}:")).expect("section") + 1;
    let lines: Vec<&str> = base[start..].split_inclusive('\n').collect();
    let mut len = lines[0].len();
    for line in &lines[1..] {
        if !line.starts_with(' ') && !line.trim().is_empty() {
            break;
        }
        len += line.len();
    }
    format!(
        "{}{}\n{}",
        &base[..start],
        replacement,
        &base[start + len..]
    )
}

/// 1-based line of the `nth` line containing `marker`.
fn line_of(text: &str, marker: &str, nth: usize) -> u64 {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains(marker))
        .nth(nth)
        .unwrap_or_else(|| panic!("marker {marker:?} not in fixture"))
        .0 as u64
        + 1
}

struct Case {
    name: &'static str,
    text: String,
    rule: Option<u64>,
    check: &'static str,
    path: &'static str,
    /// Where the finding must point: (marker, occurrence); `None` is line 1.
    at: Option<(&'static str, usize)>,
}

fn case(
    name: &'static str,
    edits: &[(&str, &str)],
    rule: Option<u64>,
    check: &'static str,
    path: &'static str,
    at: Option<(&'static str, usize)>,
) -> Case {
    Case {
        name,
        text: edit(MID_SPRINT, edits),
        rule,
        check,
        path,
        at,
    }
}

const CLAIMED_CORE: &str = "    worktree: .worktrees/t-claimed\n    base_commit: 3333333333333333333333333333333333333333\n    lease_expires: 2099-01-01T00:00:00Z\n";
const CODER2_LEASE: &str = "    current_task: t-claimed\n    lease_expires: 2099-01-01T00:00:00Z\n";

fn error_cases() -> Vec<Case> {
    let no_abandoned_in_plan = ("t-abandoned, t-intfail", "t-intfail");
    vec![
        // Rule 1
        case(
            "missing top-level key",
            &[("\nagents:\n", "\nagentz:\n")],
            Some(1),
            "top-level-key",
            "agents",
            None,
        ),
        Case {
            name: "null top-level key",
            text: replace_section(MID_SPRINT, "config", "config: null"),
            rule: Some(1),
            check: "top-level-key",
            path: "config",
            at: Some(("config: null", 0)),
        },
        case(
            "version not an int",
            &[("version: 1\n", "version: one\n")],
            Some(1),
            "version-int",
            "version",
            None,
        ),
        case(
            "unknown schema version",
            &[("version: 1\n", "version: 2\n")],
            Some(1),
            "version-value",
            "version",
            None,
        ),
        // Rule 2
        case(
            "unknown task status",
            &[("status: UNCLAIMED", "status: unclaimed")],
            Some(2),
            "task-status",
            "tasks[2].status",
            Some(("status: unclaimed", 0)),
        ),
        case(
            "duplicate task id",
            &[
                ("- id: t-abandoned", "- id: t-merged"),
                no_abandoned_in_plan,
            ],
            Some(2),
            "task-id-duplicate",
            "tasks[9].id",
            Some(("- id: t-merged", 1)),
        ),
        case(
            "task id also archived",
            &[("- id: t-abandoned", "- id: t-old"), no_abandoned_in_plan],
            Some(2),
            "task-id-duplicate",
            "tasks[9].id",
            Some(("- id: t-old", 0)),
        ),
        case(
            "malformed task id",
            &[("- id: t-abandoned", "- id: ../evil"), no_abandoned_in_plan],
            Some(2),
            "task-id",
            "tasks[9].id",
            Some(("../evil", 0)),
        ),
        case(
            "priority out of range",
            &[("priority: 5", "priority: 9")],
            Some(2),
            "task-priority",
            "tasks[9].priority",
            Some(("priority: 9", 0)),
        ),
        // Rule 3
        case(
            "DRAFT with assignee",
            &[(
                "    status: DRAFT\n",
                "    status: DRAFT\n    assigned_to: coder-9\n",
            )],
            Some(3),
            "draft-assigned",
            "tasks[0].assigned_to",
            Some(("assigned_to: coder-9", 0)),
        ),
        case(
            "CLAIMED without assignee",
            &[("    assigned_to: coder-2\n", "")],
            Some(3),
            "claimed-unassigned",
            "tasks[3].assigned_to",
            Some(("id: t-claimed", 0)),
        ),
        case(
            "CLAIMED without worktree",
            &[("    worktree: .worktrees/t-claimed\n", "")],
            Some(3),
            "claimed-no-worktree",
            "tasks[3].worktree",
            Some(("id: t-claimed", 0)),
        ),
        case(
            "CLAIMED without lease",
            &[(
                CLAIMED_CORE,
                "    worktree: .worktrees/t-claimed\n    base_commit: 3333333333333333333333333333333333333333\n",
            )],
            Some(3),
            "claimed-no-lease",
            "tasks[3].lease_expires",
            Some(("id: t-claimed", 0)),
        ),
        case(
            "CLAIMED without base commit",
            &[(
                CLAIMED_CORE,
                "    worktree: .worktrees/t-claimed\n    lease_expires: 2099-01-01T00:00:00Z\n",
            )],
            Some(3),
            "claimed-no-base-commit",
            "tasks[3].base_commit",
            Some(("id: t-claimed", 0)),
        ),
        // Rule 4
        case(
            "READY_FOR_REVIEW without review_commit",
            &[(
                "    review_commit: 4444444444444444444444444444444444444444\n",
                "",
            )],
            Some(4),
            "review-no-commit",
            "tasks[4].review_commit",
            Some(("id: t-review", 0)),
        ),
        case(
            "REJECTED without reason",
            &[(
                "    rejection_reason: |\n      Blockers:\n      - src/pretty.rs:12: indents with four spaces; the spec says two. Use two and test it.\n      Overall: fix the indentation.\n",
                "",
            )],
            Some(4),
            "rejected-no-reason",
            "tasks[5].rejection_reason",
            Some(("id: t-rejected", 0)),
        ),
        case(
            "BLOCKED without reason",
            &[(
                "    blocked_reason: The spec does not say what to print when the input ends early\n",
                "",
            )],
            Some(4),
            "blocked-no-reason",
            "tasks[7].blocked_reason",
            Some(("id: t-blocked", 0)),
        ),
        case(
            "BLOCKED without questions",
            &[(
                "    blocked_questions:\n      - Should a truncated report still be valid JSON?\n      - Is a trailing error object acceptable?\n",
                "",
            )],
            Some(4),
            "blocked-no-questions",
            "tasks[7].blocked_questions",
            Some(("id: t-blocked", 0)),
        ),
        case(
            "BLOCKED with four questions",
            &[(
                "      - Is a trailing error object acceptable?\n",
                "      - Is a trailing error object acceptable?\n      - Third?\n      - Fourth?\n",
            )],
            Some(4),
            "blocked-questions-count",
            "tasks[7].blocked_questions",
            Some(("blocked_questions:", 0)),
        ),
        case(
            "SUPERSEDED without successors",
            &[("    superseded_by: [t-unclaimed]\n", "")],
            Some(4),
            "superseded-no-successors",
            "tasks[8].superseded_by",
            Some(("id: t-superseded", 0)),
        ),
        case(
            "SUPERSEDED without reason",
            &[(
                "    rescope_reason: Too large for one task; the table is done separately.\n",
                "",
            )],
            Some(4),
            "superseded-no-reason",
            "tasks[8].rescope_reason",
            Some(("id: t-superseded", 0)),
        ),
        case(
            "MERGED with worktree",
            &[(
                "    merge_commit: 3333333333333333333333333333333333333333\n",
                "    merge_commit: 3333333333333333333333333333333333333333\n    worktree: .worktrees/t-merged\n",
            )],
            Some(4),
            "merged-with-worktree",
            "tasks[1].worktree",
            Some(("worktree: .worktrees/t-merged", 0)),
        ),
        // Rule 5
        case(
            "agent on two active tasks",
            &[("    assigned_to: coder-4\n", "    assigned_to: coder-2\n")],
            Some(5),
            "agent-multiple-active",
            "tasks[5].assigned_to",
            Some(("assigned_to: coder-2", 1)),
        ),
        // Rule 6
        case(
            "dependency on an unknown task",
            &[(
                "    depends_on: [t-merged]\n    history:",
                "    depends_on: [t-nope]\n    history:",
            )],
            Some(6),
            "depends-on-unknown",
            "tasks[2].depends_on[0]",
            Some(("t-nope", 0)),
        ),
        case(
            "dependency cycle",
            &[(
                "    scope: \"IN: option parsing. OUT: rendering.\"\n",
                "    scope: \"IN: option parsing. OUT: rendering.\"\n    depends_on: [t-unclaimed]\n",
            )],
            Some(6),
            "dependency-cycle",
            "tasks[2].depends_on",
            Some(("depends_on: [t-merged]", 0)),
        ),
        case(
            "CLAIMED with unsatisfied dependency",
            &[(
                "    depends_on: [t-merged]\n    assigned_to: coder-2\n",
                "    depends_on: [t-unclaimed]\n    assigned_to: coder-2\n",
            )],
            Some(6),
            "claimed-deps-unsatisfied",
            "tasks[3].depends_on",
            Some(("depends_on: [t-unclaimed]", 0)),
        ),
        // Rule 7
        case(
            "integration fix without failure event",
            &[(
                "      - time: 2026-03-01T12:20:00Z\n        event: integration_failed\n        agent: code-reviewer-1\n",
                "",
            )],
            Some(7),
            "integration-fix-without-failure",
            "tasks[11].integration_fix",
            Some(("integration_fix: true", 0)),
        ),
        // Rule 8
        case(
            "malformed agent id",
            &[("  coder-3:\n", "  coder3:\n")],
            Some(8),
            "agent-id",
            "agents.coder3",
            Some(("coder3:", 0)),
        ),
        case(
            "agent role does not match id",
            &[(
                "  coder-3:\n    role: coder\n",
                "  coder-3:\n    role: planner\n",
            )],
            Some(8),
            "agent-role-mismatch",
            "agents.coder-3.role",
            Some(("role: planner", 1)),
        ),
        case(
            "unknown agent role",
            &[(
                "  coder-3:\n    role: coder\n",
                "  coder-3:\n    role: tester\n",
            )],
            Some(8),
            "agent-role",
            "agents.coder-3.role",
            Some(("role: tester", 0)),
        ),
        case(
            "unknown agent status",
            &[("    status: WAITING\n", "    status: SLEEPING\n")],
            Some(8),
            "agent-status",
            "agents.coder-3.status",
            Some(("status: SLEEPING", 0)),
        ),
        case(
            "WORKING agent without task",
            &[("    current_task: t-claimed\n", "")],
            Some(8),
            "working-no-task",
            "agents.coder-2.current_task",
            Some(("  coder-2:", 0)),
        ),
        case(
            "WORKING agent without lease",
            &[(CODER2_LEASE, "    current_task: t-claimed\n")],
            Some(8),
            "working-no-lease",
            "agents.coder-2.lease_expires",
            Some(("  coder-2:", 0)),
        ),
        // Rule 9
        case(
            "failed_by duplicates",
            &[(
                "    failed_by: [coder-6]\n",
                "    failed_by: [coder-6, coder-6]\n",
            )],
            Some(9),
            "failed-by-duplicate",
            "tasks[7].failed_by[1]",
            Some(("failed_by: [coder-6, coder-6]", 0)),
        ),
        case(
            "missing done_when",
            &[(
                "    done_when: report --json prints the table rows as a JSON array\n",
                "",
            )],
            Some(9),
            "missing-done-when",
            "tasks[2].done_when",
            Some(("id: t-unclaimed", 0)),
        ),
        case(
            "missing spec_ref",
            &[("    spec_ref: specs/vision.md#table\n", "")],
            Some(9),
            "missing-spec-ref",
            "tasks[2].spec_ref",
            Some(("id: t-unclaimed", 0)),
        ),
        case(
            "spec file missing",
            &[(
                "spec_ref: specs/vision.md#table",
                "spec_ref: specs/table.md#rows",
            )],
            Some(9),
            "spec-file-missing",
            "tasks[2].spec_ref",
            Some(("specs/table.md", 0)),
        ),
        // Rule 10
        case(
            "handoff without summary",
            &[(
                "    summary: Totals are computed; rendering is half done.\n",
                "",
            )],
            Some(10),
            "handoff-no-summary",
            "handoff.t-claimed.summary",
            Some(("  t-claimed:", 0)),
        ),
        case(
            "handoff without next_action",
            &[(
                "    next_action: Finish the totals renderer and run the tests.\n",
                "",
            )],
            Some(10),
            "handoff-no-next-action",
            "handoff.t-claimed.next_action",
            Some(("  t-claimed:", 0)),
        ),
        case(
            "unknown discovery urgency",
            &[("urgency: immediate", "urgency: soon")],
            Some(10),
            "discovery-urgency",
            "discovered[0].urgency",
            Some(("urgency: soon", 0)),
        ),
        case(
            "unknown anomaly type",
            &[("    type: spec_gap\n", "    type: spec_hole\n")],
            Some(10),
            "anomaly-type",
            "anomalies[5].type",
            Some(("type: spec_hole", 0)),
        ),
        case(
            "anomaly without required details",
            &[("      error_pattern: \"E0308: mismatched types\"\n", "")],
            Some(10),
            "anomaly-details",
            "anomalies[0].details",
            Some(("    details:", 0)),
        ),
        // Rule 11
        case(
            "unknown sprint status",
            &[("  status: CHECKPOINT\n", "  status: RUNNING\n")],
            Some(11),
            "sprint-status",
            "sprint.status",
            Some(("status: RUNNING", 0)),
        ),
        case(
            "sprint goal_ref mismatch",
            &[("  goal_ref: goal-1\n", "  goal_ref: goal-2\n")],
            Some(11),
            "sprint-goal-ref",
            "sprint.goal_ref",
            Some(("goal_ref: goal-2", 0)),
        ),
        case(
            "unknown planned task",
            &[("t-intfail, t-fix]", "t-intfail, t-fix, t-ghost]")],
            Some(11),
            "sprint-planned-unknown",
            "sprint.scope.planned[12]",
            Some(("t-ghost", 0)),
        ),
        case(
            "unknown stretch task",
            &[("stretch: [t-old]", "stretch: [t-old, t-ghost]")],
            Some(11),
            "sprint-stretch-unknown",
            "sprint.scope.stretch[1]",
            Some(("t-ghost", 0)),
        ),
        case(
            "sprint without start",
            &[("    started: 2026-03-01T09:00:00Z\n", "")],
            Some(11),
            "sprint-no-start",
            "sprint.timeline.started",
            Some(("  timeline:", 0)),
        ),
        case(
            "unknown goal status",
            &[(
                "  status: IN_PROGRESS\n  alignment_history:",
                "  status: DONE\n  alignment_history:",
            )],
            Some(11),
            "goal-status",
            "goal.status",
            Some(("status: DONE", 0)),
        ),
        case(
            "unparseable timestamp",
            &[("created: 2026-03-01T09:13:00Z", "created: yesterday")],
            Some(11),
            "timestamp",
            "tasks[9].created",
            Some(("created: yesterday", 0)),
        ),
        case(
            "config value out of range",
            &[("  max_review_cycles: 5\n", "  max_review_cycles: 0\n")],
            Some(11),
            "config-range",
            "config.max_review_cycles",
            Some(("max_review_cycles: 0", 0)),
        ),
        case(
            "lease not longer than heartbeat",
            &[("  lease_duration: 120\n", "  lease_duration: 10\n")],
            Some(11),
            "config-range",
            "config.lease_duration",
            Some(("lease_duration: 10", 0)),
        ),
        case(
            "config value of the wrong type",
            &[("  max_review_cycles: 5\n", "  max_review_cycles: many\n")],
            Some(11),
            "config-type",
            "config.max_review_cycles",
            Some(("max_review_cycles: many", 0)),
        ),
        case(
            "config enum value unknown",
            &[("  plan_approval: auto\n", "  plan_approval: sometimes\n")],
            Some(11),
            "config-value",
            "config.plan_approval",
            Some(("plan_approval: sometimes", 0)),
        ),
        case(
            "invalid integration branch",
            &[(
                "  integration_branch: integration\n",
                "  integration_branch: \"bad branch\"\n",
            )],
            Some(11),
            "config-value",
            "config.integration_branch",
            Some(("bad branch", 0)),
        ),
        case(
            "a sandbox path that would show the whole home",
            &[(
                "  integration_branch: integration\n",
                "  integration_branch: integration\n  sandbox:\n    writable: [\"~\"]\n",
            )],
            Some(11),
            "config-value",
            "config.sandbox.writable[0]",
            Some(("writable: [\"~\"]", 0)),
        ),
        case(
            "a relative sandbox path",
            &[(
                "  integration_branch: integration\n",
                "  integration_branch: integration\n  sandbox:\n    read_only: [cache/tools]\n",
            )],
            Some(11),
            "config-value",
            "config.sandbox.read_only[0]",
            Some(("read_only: [cache/tools]", 0)),
        ),
        case(
            "an unknown sandbox mode",
            &[(
                "  integration_branch: integration\n",
                "  integration_branch: integration\n  sandbox:\n    mode: sometimes\n",
            )],
            Some(11),
            "config-value",
            "config.sandbox.mode",
            Some(("mode: sometimes", 0)),
        ),
        // Rule 12
        case(
            "negative revision",
            &[("revision: 41\n", "revision: -1\n")],
            Some(12),
            "revision-negative",
            "revision",
            Some(("revision: -1", 0)),
        ),
        case(
            "revision not an int",
            &[("revision: 41\n", "revision: forty\n")],
            Some(12),
            "revision-int",
            "revision",
            Some(("revision: forty", 0)),
        ),
        // Schema checks outside the 12 rules
        case(
            "invalid YAML",
            &[("  - id: t-abandoned\n", "  - id: [t-abandoned\n")],
            None,
            "yaml-syntax",
            "(document)",
            Some(("description: XML output", 0)),
        ),
        case(
            "field of the wrong type",
            &[(
                "    description: XML output\n",
                "    description: [XML, output]\n",
            )],
            None,
            "type",
            "tasks[9].description",
            Some(("[XML, output]", 0)),
        ),
        case(
            "task without status",
            &[("    status: ABANDONED\n", "")],
            None,
            "required",
            "tasks[9].status",
            Some(("id: t-abandoned", 0)),
        ),
        case(
            "malformed commit id",
            &[(
                "    review_commit: 7777777777777777777777777777777777777777\n",
                "    review_commit: not-a-sha\n",
            )],
            None,
            "commit-id",
            "tasks[10].review_commit",
            Some(("not-a-sha", 0)),
        ),
    ]
}

#[test]
fn each_check_broken_alone_is_reported_with_rule_path_and_line() {
    let cases = error_cases();
    assert!(cases.len() >= 50, "every sub-check has a fixture");
    for c in &cases {
        let dir = project(&c.text);
        let out = validate(dir.path(), &[], &[]);
        assert_exit(&out, 1);
        let found = findings(&out);
        let errors: Vec<_> = found.iter().filter(|f| f["severity"] == "error").collect();
        assert!(!errors.is_empty(), "{}: no error reported", c.name);
        for f in &errors {
            assert_eq!(f["check"], c.check, "{}: unexpected finding {f}", c.name);
        }
        let f = errors[0];
        assert_eq!(f["rule"].as_u64(), c.rule, "{}: rule of {f}", c.name);
        assert_eq!(f["path"], c.path, "{}: path of {f}", c.name);
        let line =
            c.at.map_or(1, |(marker, nth)| line_of(&c.text, marker, nth));
        assert_eq!(f["line"].as_u64(), Some(line), "{}: line of {f}", c.name);
        assert!(
            f["column"].as_u64().unwrap() >= 1,
            "{}: column of {f}",
            c.name
        );
    }
}

#[test]
fn a_missing_worktree_directory_is_reported() {
    let dir = project(MID_SPRINT);
    std::fs::remove_dir(dir.path().join(".worktrees/t-claimed")).unwrap();
    let out = validate(dir.path(), &[], &[]);
    assert_exit(&out, 1);
    let found = findings(&out);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["check"], "claimed-worktree-missing");
    assert_eq!(found[0]["rule"], 3);
    assert_eq!(found[0]["path"], "tasks[3].worktree");
    assert_eq!(found[0]["id"], "t-claimed");
    assert_eq!(
        found[0]["line"].as_u64(),
        Some(line_of(MID_SPRINT, "worktree: .worktrees/t-claimed", 0))
    );
}

#[test]
fn the_spec_file_check_can_be_skipped() {
    let text = edit(
        MID_SPRINT,
        &[(
            "spec_ref: specs/vision.md#table",
            "spec_ref: specs/table.md#rows",
        )],
    );
    let dir = project(&text);
    assert_exit(&validate(dir.path(), &[], &[]), 1);
    assert_exit(&validate(dir.path(), &["--skip-spec-check"], &[]), 0);
    assert_exit(
        &validate(dir.path(), &[], &[("SKIP_SPEC_FILE_CHECK", "true")]),
        0,
    );
    assert_exit(
        &validate(dir.path(), &[], &[("SKIP_SPEC_FILE_CHECK", "yes")]),
        1,
    );
}

#[test]
fn warnings_do_not_fail_validation() {
    let cases = [
        (
            edit(
                MID_SPRINT,
                &[(
                    CODER2_LEASE,
                    "    current_task: t-claimed\n    lease_expires: 2020-01-01T00:00:00Z\n",
                )],
            ),
            "working-lease-expired",
            "agents.coder-2.lease_expires",
        ),
        (
            edit(
                MID_SPRINT,
                &[(
                    "  max_review_cycles: 5\n",
                    "  max_review_cycles: 5\n  max_reveiw_cycles: 3\n",
                )],
            ),
            "config-unknown-key",
            "config.max_reveiw_cycles",
        ),
    ];
    for (text, check, path) in cases {
        let dir = project(&text);
        let out = validate(dir.path(), &[], &[]);
        assert_exit(&out, 0);
        let found = findings(&out);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0]["severity"], "warning");
        assert_eq!(found[0]["check"], check);
        assert_eq!(found[0]["path"], path);
    }
}

#[test]
fn several_problems_are_all_reported() {
    let text = edit(
        MID_SPRINT,
        &[
            ("status: UNCLAIMED", "status: unclaimed"),
            (
                "    failed_by: [coder-6]\n",
                "    failed_by: [coder-6, coder-6]\n",
            ),
            ("  max_review_cycles: 5\n", "  max_review_cycles: 0\n"),
        ],
    );
    let dir = project(&text);
    let out = validate(dir.path(), &[], &[]);
    assert_exit(&out, 1);
    let checks: Vec<String> = findings(&out)
        .iter()
        .map(|f| f["check"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        checks,
        ["task-status", "failed-by-duplicate", "config-range"]
    );
}

#[test]
fn the_mid_sprint_fixture_holds_every_status_and_is_valid() {
    for status in [
        "DRAFT",
        "UNCLAIMED",
        "CLAIMED",
        "READY_FOR_REVIEW",
        "REJECTED",
        "APPROVED",
        "MERGED",
        "BLOCKED",
        "SUPERSEDED",
        "ABANDONED",
        "INTEGRATION_FAILED",
    ] {
        assert!(
            MID_SPRINT.contains(&format!("    status: {status}\n")),
            "{status}"
        );
    }
    let dir = project(MID_SPRINT);
    let out = validate(dir.path(), &[], &[]);
    assert_exit(&out, 0);
    assert_eq!(findings(&out), Vec::<serde_json::Value>::new());
    assert_eq!(json(&out)["result"]["revision"], 41);
}

#[test]
fn a_blackboard_of_the_original_tooling_validates() {
    let dir = project(BASH_STYLE);
    let out = validate(dir.path(), &[], &[]);
    assert_exit(&out, 0);
    let found = findings(&out);
    // Only the settings the original scripts used and liza does not.
    assert!(
        found.iter().all(|f| f["check"] == "config-legacy-key"),
        "{found:?}"
    );
    assert_eq!(found.len(), 3);
    assert_eq!(json(&out)["result"]["revision"], 0);
}

#[test]
fn human_output_names_file_line_and_hint() {
    let text = edit(
        MID_SPRINT,
        &[(
            "spec_ref: specs/vision.md#table",
            "spec_ref: specs/table.md#rows",
        )],
    );
    let dir = project(&text);
    let out = std::process::Command::new(LIZA)
        .env_clear()
        .current_dir(dir.path())
        .args(["validate", ".liza/state.yaml"])
        .output()
        .unwrap();
    assert_exit(&out, 1);
    let text_out = stdout(&out);
    let line = line_of(&text, "specs/table.md", 0);
    assert!(
        text_out.contains(&format!(".liza/state.yaml:{line}:5: error: spec file specs/table.md does not exist [rule 9 spec-file-missing] at tasks[2].spec_ref (t-unclaimed)")),
        "{text_out}"
    );
    assert!(text_out.contains("hint: create the spec"), "{text_out}");
    assert!(text_out.contains("1 error, 0 warnings"), "{text_out}");
}

#[test]
fn binary_junk_and_empty_files_are_findings() {
    let dir = project("");
    std::fs::write(
        dir.path().join(".liza/state.yaml"),
        b"version: 1\n\x00\xff\xfe junk",
    )
    .unwrap();
    let out = validate(dir.path(), &[], &[]);
    assert_exit(&out, 1);
    assert_eq!(findings(&out)[0]["check"], "utf8");
    assert_eq!(findings(&out)[0]["line"], 2);
    std::fs::write(dir.path().join(".liza/state.yaml"), b"").unwrap();
    let out = validate(dir.path(), &[], &[]);
    assert_exit(&out, 1);
    assert_eq!(findings(&out)[0]["rule"], 1);
}

#[test]
fn generated_blackboards_are_valid() {
    let state = liza::bench::generate_state(60, 2600, liza::blackboard::Timestamp::now());
    let text = liza::blackboard::document::emit(&state, 0);
    let dir = project(&text);
    for spec in liza::bench::spec_files() {
        std::fs::write(dir.path().join(spec), "# spec\n").unwrap();
    }
    for wt in liza::bench::worktree_dirs(&state) {
        std::fs::create_dir_all(dir.path().join(wt)).unwrap();
    }
    let out = validate(dir.path(), &[], &[]);
    assert_exit(&out, 0);
    assert_eq!(findings(&out), Vec::<serde_json::Value>::new());
}
