//! The built-in agent end to end: real supervisors (`liza agent <role> --cli builtin`)
//! run `liza builtin <role>` against a scripted model server on loopback. The coder's
//! first draft genuinely fails the project's check and is reworked; the reviewer's
//! findings are grounded in the file at the review commit; a failing check forces a
//! reject whatever the model says.

use crate::common::team::{add, configure};
use crate::common::{Repo, stdout};
use liza::blackboard::model::{Check, CommandSpec};
use liza::llm::scripted_server::{Script, ScriptedServer, Step};
use serde_json::json;

const CANARY: &str = "canary-api-key-0123456789";

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &std::path::Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else if std::fs::read(&path)
                .is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

fn edits(content: &str) -> String {
    json!({"edits": [{"path": "greeting.txt", "content": content}]}).to_string()
}

/// A repository with task t-1 and a check that `greeting.txt` says hello (run on review
/// too when `on_review`).
fn project(on_review: bool) -> Repo {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    configure(&repo, |c| {
        c.checks = Some(vec![Check {
            name: "greeting".into(),
            run: CommandSpec::Shell("grep -q hello greeting.txt".into()),
            timeout: Some(30),
            on_review: Some(on_review),
            on_merge: None,
            extra: Default::default(),
        }]);
    });
    repo
}

/// Runs one supervised built-in turn of `role` on t-1; returns its output.
fn run_agent(repo: &Repo, role: &str, agent: &str, server: &ScriptedServer) -> String {
    let out = repo
        .command()
        .env("LIZA_AGENT_ID", agent)
        .env("LIZA_LLM_BASE_URL", server.base_url())
        .env("LIZA_LLM_API_KEY", CANARY)
        .env("LIZA_LLM_BACKOFF_MS", "10")
        .args(["agent", role, "t-1", "--cli", "builtin", "--once"])
        .output()
        .unwrap();
    format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr))
}

fn code_once(repo: &Repo, content: &str) {
    let server = ScriptedServer::start(Script {
        steps: vec![Step::answer(edits(content))],
    })
    .unwrap();
    let text = run_agent(repo, "coder", "coder-1", &server);
    let task = crate::common::supervision::task_of(repo, "t-1");
    assert_eq!(task["status"], "READY_FOR_REVIEW", "{text}");
}

fn review(findings: serde_json::Value, verdict: &str) -> String {
    json!({"verdict": verdict, "findings": findings, "overall": "see the findings"}).to_string()
}

#[test]
fn the_builtin_coder_reworks_a_failing_draft_then_commits_and_submits() {
    let repo = project(false);
    let server = ScriptedServer::start(Script {
        steps: vec![
            Step::answer_when("The project's checks failed", edits("hello, world\n")),
            Step::answer_when("# Task t-1", edits("hi\n")),
        ],
    })
    .unwrap();
    let text = run_agent(&repo, "coder", "coder-1", &server);
    assert_eq!(server.requests().len(), 2, "{text}");
    let task = crate::common::supervision::task_of(&repo, "t-1");
    assert_eq!(task["status"], "READY_FOR_REVIEW", "{text}\n{task:#}");
    // The commit on the task branch carries the agent trailer and the passing content.
    let log = repo.git(&["log", "-1", "--format=%B", "task/t-1"]);
    assert!(
        log.starts_with("feat: ") && log.contains("[agent:t-1]"),
        "{log}"
    );
    assert_eq!(
        repo.git(&["show", "task/t-1:greeting.txt"]),
        "hello, world\n"
    );
    // The CommitResult is in the history, with the tokens of both calls in the usage.
    let history = task["history"].as_array().unwrap();
    let result = history
        .iter()
        .find(|e| e["event"] == "commit_result")
        .expect("commit_result");
    assert_eq!(result["agent"], "coder-1", "{result:#}");
    let fields = &result["extra"]["result"];
    assert_eq!(fields["status"], "SUCCESS", "{result:#}");
    assert_eq!(fields["retries"], 1);
    assert_eq!(fields["llm_tokens_used"], 30);
    assert_eq!(fields["branch_name"], "task/t-1");
    assert_eq!(task["usage"]["prompt_tokens"], 20);
    assert_eq!(task["usage"]["completion_tokens"], 10);
    // The second request carried the check's real failure back to the model.
    let second = server.requests()[1].messages_text();
    assert!(second.contains("## greeting (exit"), "{second}");
    // The run log has the patch, the check results and the CommitResult.
    let runs = std::fs::read_dir(repo.liza_dir().join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let lines = std::fs::read_to_string(runs).unwrap();
    for kind in [
        "\"type\":\"patch\"",
        "\"type\":\"test_result\"",
        "\"type\":\"commit_result\"",
    ] {
        assert!(lines.contains(kind), "{kind}: {lines}");
    }
    // S3: the key reached the endpoint in its header only; it is nowhere on disk or in
    // any git object.
    assert_eq!(
        server.requests()[0].headers["authorization"],
        format!("Bearer {CANARY}")
    );
    assert!(files_containing(&repo.liza_dir(), CANARY).is_empty());
    assert!(files_containing(&repo.path().join(".worktrees"), CANARY).is_empty());
    let objects = repo
        .command_for("git")
        .args(["cat-file", "--batch-all-objects", "--batch"])
        .output()
        .unwrap();
    assert!(objects.status.success());
    assert!(
        !objects
            .stdout
            .windows(CANARY.len())
            .any(|w| w == CANARY.as_bytes())
    );
}

#[test]
fn the_builtin_reviewer_rejects_with_grounded_findings_only() {
    let repo = project(false);
    code_once(&repo, "hello\nworld, says the greeting\n");
    // One finding quotes the file with wrong offsets (repaired), one quotes text that is
    // not there (dropped with its finding).
    let answer = review(
        json!([
            {"severity": "blocker", "path": "greeting.txt", "quotes": [{"text": "world, says", "start_pos": 0, "end_pos": 11}],
             "issue": "the greeting is impolite", "suggestion": "say please"},
            {"severity": "blocker", "path": "greeting.txt", "quotes": [{"text": "goodbye", "start_pos": 0, "end_pos": 7}],
             "issue": "made up"}
        ]),
        "reject",
    );
    let server = ScriptedServer::start(Script {
        steps: vec![Step::answer(answer)],
    })
    .unwrap();
    let text = run_agent(&repo, "code-reviewer", "code-reviewer-1", &server);
    let task = crate::common::supervision::task_of(&repo, "t-1");
    assert_eq!(task["status"], "REJECTED", "{text}\n{task:#}");
    let reason = task["rejection_reason"].as_str().unwrap();
    assert!(
        reason.contains("greeting.txt:2: the greeting is impolite — say please"),
        "{reason}"
    );
    assert!(!reason.contains("made up"), "{reason}");
    assert!(reason.contains("Overall: see the findings"), "{reason}");
    let history = task["history"].as_array().unwrap();
    let result = &history
        .iter()
        .find(|e| e["event"] == "review_result")
        .expect("review_result")["extra"]["result"];
    assert_eq!(result["verdict"], "reject");
    assert_eq!(result["findings"], 1);
    assert_eq!(result["quotes_dropped"], 1);
}

#[test]
fn a_failing_check_forces_a_reject_and_an_ungrounded_reject_is_no_verdict() {
    // The coder's work passes no check here (none runs for it), but the review runs one.
    let repo = project(true);
    configure(&repo, |c| {
        if let Some(check) = c.checks.as_mut().and_then(|v| v.first_mut()) {
            check.run = CommandSpec::Shell("grep -q bonjour greeting.txt".into());
        }
    });
    // The coder's own check is the same one: let it pass by writing both words.
    code_once(&repo, "hello bonjour\n");
    configure(&repo, |c| {
        if let Some(check) = c.checks.as_mut().and_then(|v| v.first_mut()) {
            check.run = CommandSpec::Shell("grep -q guten-tag greeting.txt".into());
        }
    });
    let server = ScriptedServer::start(Script {
        steps: vec![Step::answer(review(json!([]), "approve"))],
    })
    .unwrap();
    let text = run_agent(&repo, "code-reviewer", "code-reviewer-1", &server);
    let task = crate::common::supervision::task_of(&repo, "t-1");
    assert_eq!(task["status"], "REJECTED", "{text}");
    let reason = task["rejection_reason"].as_str().unwrap();
    assert!(
        reason.contains("the check `greeting` fails on the review commit"),
        "{reason}"
    );
    // The model saw liza's own check result.
    assert!(
        server.requests()[0]
            .messages_text()
            .contains("### greeting: exit")
    );

    // Next cycle: the check passes, the model rejects twice without a quotable blocker.
    code_once(&repo, "guten-tag hello bonjour\n");
    let ungrounded = review(
        json!([{"severity": "blocker", "path": "greeting.txt", "quotes": [{"text": "not in the file", "start_pos": 0, "end_pos": 15}], "issue": "vague"}]),
        "reject",
    );
    let server = ScriptedServer::start(Script {
        steps: vec![Step {
            times: Some(0),
            ..Step::answer(ungrounded)
        }],
    })
    .unwrap();
    let text = run_agent(&repo, "code-reviewer", "code-reviewer-1", &server);
    assert_eq!(server.requests().len(), 2, "asked once more: {text}");
    let task = crate::common::supervision::task_of(&repo, "t-1");
    assert_eq!(
        task["status"], "READY_FOR_REVIEW",
        "no verdict, the review is released: {text}"
    );
    assert!(task["reviewing_by"].is_null(), "{task:#}");
}

#[test]
fn the_builtin_planner_plans_drafts_and_finalizes_those_whose_gates_pass() {
    let repo = Repo::initialized();
    let plan = json!({"plan_id": "plan_0001", "tasks": [
        {"id": "greet", "title": "Add greet.sh", "rationale": "people want a greeting",
         "acceptance": "sh greet.sh prints hello", "artifacts": ["greet.sh"],
         "spec_ref": "specs/vision.md", "scope": "greet.sh", "priority": 1},
        {"title": "Test greet.sh", "acceptance": "sh test.sh exits 0", "artifacts": ["test.sh"],
         "spec_ref": "specs/vision.md", "depends_on": ["greet"], "priority": 2},
        {"title": "Plan without a spec", "acceptance": "sh x.sh prints x", "scope": "x.sh"},
        {"title": "Cite a missing spec", "acceptance": "sh y.sh prints y", "spec_ref": "specs/missing.md"}
    ]});
    let server = ScriptedServer::start(Script {
        steps: vec![Step::answer_when("# Goal", plan.to_string())],
    })
    .unwrap();
    let text = run_agent(&repo, "planner", "planner-1", &server);
    let greet = crate::common::supervision::task_of(&repo, "greet");
    assert_eq!(greet["status"], "UNCLAIMED", "{text}\n{greet:#}");
    assert_eq!(
        greet["description"],
        "Add greet.sh\n\npeople want a greeting"
    );
    assert_eq!(greet["done_when"], "sh greet.sh prints hello");
    assert_eq!(greet["paths"], json!(["greet.sh"]));
    let t1 = crate::common::supervision::task_of(&repo, "T1");
    assert_eq!(t1["status"], "UNCLAIMED", "{text}");
    assert_eq!(t1["depends_on"], json!(["greet"]));
    // A task without a spec_ref fails the finalize gates and stays a draft; one citing a
    // spec that does not exist would make the blackboard invalid and is refused.
    let t2 = crate::common::supervision::task_of(&repo, "T2");
    assert_eq!(t2["status"], "DRAFT", "{text}\n{t2:#}");
    assert!(crate::common::supervision::task_of(&repo, "T3").is_null());
    assert!(
        text.contains("task T3 refused") && text.contains("specs/missing.md does not exist"),
        "{text}"
    );
    // The model saw the goal and the repository.
    let asked = server.requests()[0].messages_text();
    assert!(
        asked.contains("Add a --json flag") && asked.contains("specs/vision.md"),
        "{asked}"
    );
}

/// Two decisions of one answer each add a task without an id: each gets its own (T1, T2),
/// not the same next free id from the snapshot taken before either was applied.
#[test]
fn two_decisions_of_one_answer_add_two_tasks_with_their_own_ids() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    crate::common::assert_success(&repo.liza(&["note", "all", "add a greeting and a farewell"]));
    let task = |title: &str, file: &str| {
        json!({"title": title, "acceptance": format!("sh {file} exits 0"),
               "spec_ref": "specs/vision.md", "scope": file, "artifacts": [file]})
    };
    let decisions = json!({"decisions": [
        {"decision": "add_task", "reason": "the note asks for a greeting",
         "tasks": [task("Add greet.sh", "greet.sh")]},
        {"decision": "add_task", "reason": "the note asks for a farewell",
         "tasks": [task("Add bye.sh", "bye.sh")]}
    ]});
    let server = ScriptedServer::start(Script {
        steps: vec![Step::answer(decisions.to_string())],
    })
    .unwrap();
    let text = run_agent(&repo, "planner", "planner-1", &server);
    assert!(text.contains("2 of 2 decisions applied"), "{text}");
    let t1 = crate::common::supervision::task_of(&repo, "T1");
    let t2 = crate::common::supervision::task_of(&repo, "T2");
    assert_eq!(t1["paths"], json!(["greet.sh"]), "{text}\n{t1:#}");
    assert_eq!(t2["paths"], json!(["bye.sh"]), "{text}\n{t2:#}");
}

#[test]
fn a_planner_that_cannot_plan_raises_an_alarm_and_changes_nothing() {
    let repo = Repo::initialized();
    let server = ScriptedServer::start(Script {
        steps: vec![Step {
            times: Some(0),
            ..Step::answer(
                json!({"status": "error", "reason": "the goal is too vague"}).to_string(),
            )
        }],
    })
    .unwrap();
    let text = run_agent(&repo, "planner", "planner-1", &server);
    let tasks = crate::common::team::model(&repo)["tasks"].clone();
    assert!(
        tasks.as_array().is_none_or(|t| t.is_empty()),
        "{text}\n{tasks:#}"
    );
    let alerts = std::fs::read_to_string(repo.liza_dir().join("alerts.log")).unwrap_or_default();
    assert!(
        alerts.contains("PLANNER_CANNOT_PLAN") && alerts.contains("the goal is too vague"),
        "{alerts}\n{text}"
    );
}

#[test]
fn a_hard_fail_blocks_the_task_at_once_with_the_runs_notes() {
    let repo = project(false);
    let server = ScriptedServer::start(Script {
        steps: vec![Step::answer(
            json!({"status": "error", "reason": "the spec never says what to greet"}).to_string(),
        )],
    })
    .unwrap();
    let text = run_agent(&repo, "coder", "coder-1", &server);
    let task = crate::common::supervision::task_of(&repo, "t-1");
    assert_eq!(task["status"], "BLOCKED", "{text}\n{task:#}");
    let reason = task["blocked_reason"].as_str().unwrap();
    assert!(
        reason.contains("the spec never says what to greet"),
        "{reason}"
    );
    assert_eq!(task["failed_by"], json!(["coder-1"]));
}

#[test]
fn s4_edits_that_leave_the_worktree_are_refused_and_nothing_is_written() {
    let repo = project(false);
    let outside = repo.path().parent().unwrap().join("escaped.txt");
    let _ = std::fs::remove_file(&outside);
    let bad = json!({"edits": [
        {"path": "greeting.txt", "content": "hello\n"},
        {"path": "../escaped.txt", "content": "owned\n"}
    ]});
    let server = ScriptedServer::start(Script {
        steps: vec![Step {
            times: Some(0),
            ..Step::answer(bad.to_string())
        }],
    })
    .unwrap();
    let text = run_agent(&repo, "coder", "coder-1", &server);
    assert!(!outside.exists(), "{text}");
    let worktree = repo.path().join(".worktrees/t-1");
    assert!(
        !worktree.join("greeting.txt").exists(),
        "one bad path refuses the whole answer"
    );
    // Every draft was refused and the model was told why.
    assert_eq!(server.requests().len(), 3, "{text}");
    assert!(
        server.requests()[1]
            .messages_text()
            .contains("goes up with `..`")
    );
    let task = crate::common::supervision::task_of(&repo, "t-1");
    assert_eq!(
        task["status"], "CLAIMED",
        "a SOFT_FAIL counts, it does not block at once: {text}"
    );
}

#[test]
fn s3_the_model_key_never_reaches_a_cli_agents_environment() {
    let project = crate::common::supervision::AgentProject::new();
    add(&project.repo, "t-1", "");
    project.step(
        "coder",
        "default",
        "env > \"$FAKE_AGENT_DIR/env.dump\"\nwork out.txt done\nsubmit\n",
    );
    let out = project
        .repo
        .command()
        .env("LIZA_AGENT_ID", "coder-1")
        .env("FAKE_AGENT_DIR", project.scenario.path())
        .env("LIZA_LLM_API_KEY", CANARY)
        .env("OPENAI_API_KEY", "sk-canary-openai-0123456789abcdef")
        .args(["agent", "coder", "t-1", "--once"])
        .output()
        .unwrap();
    let text = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    let dump = std::fs::read_to_string(project.scenario.path().join("env.dump")).expect(&text);
    assert!(
        dump.contains("LIZA_AGENT_ID=coder-1"),
        "the dump is real: {dump}"
    );
    assert!(
        !dump.contains(CANARY) && !dump.contains("LIZA_LLM_API_KEY"),
        "{dump}"
    );
    assert!(
        !dump.contains("sk-canary-openai") && !dump.contains("OPENAI_API_KEY"),
        "{dump}"
    );
    assert!(files_containing(&project.repo.liza_dir(), CANARY).is_empty());
}

#[test]
fn reviewers_take_identities_and_a_bad_identities_file_fails_fast() {
    let repo = project(false);
    code_once(&repo, "hello\n");
    std::fs::write(
        repo.path().join("identities.yaml"),
        "- id: security\n  name: Security reviewer\n  prompt_prefix: You review for security holes first.\n- id: perf\n  name: Performance reviewer\n  prompt_prefix: You review for slow paths first.\n",
    )
    .unwrap();
    let server = ScriptedServer::start(Script {
        steps: vec![Step::answer(review(json!([]), "approve"))],
    })
    .unwrap();
    let review_as = |identity: &str| {
        repo.command()
            .env("LIZA_AGENT_ID", "code-reviewer-1")
            .env("LIZA_LLM_BASE_URL", server.base_url())
            .args([
                "agent",
                "code-reviewer",
                "t-1",
                "--cli",
                "builtin",
                "--once",
                "--identity",
                identity,
            ])
            .output()
            .unwrap()
    };
    let out = review_as("security");
    let text = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    let system = server.requests()[0].body.clone();
    let body: serde_json::Value = serde_json::from_str(&system).unwrap();
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.starts_with("You review for security holes first.\n\n"),
        "{system}\n{text}"
    );
    // `--once` merges what the run approved before it exits.
    assert_eq!(
        crate::common::supervision::task_of(&repo, "t-1")["status"],
        "MERGED",
        "{text}"
    );
    // A broken file stops the supervisor before any run, naming the file and the problem.
    std::fs::write(repo.path().join("identities.yaml"), "- id: a\n  name: A\n").unwrap();
    let out = review_as("a");
    let text = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("identities.yaml:1:3") && text.contains("prompt_prefix"),
        "{text}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn the_builtin_reviewer_sees_the_spec_change_since_the_task_was_finalized() {
    let repo = project(false);
    code_once(&repo, "hello\n");
    let spec = repo.path().join("specs/vision.md");
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, format!("{text}\nThe greeting must be in French.\n")).unwrap();
    let server = ScriptedServer::start(Script {
        steps: vec![Step::answer(review(json!([]), "approve"))],
    })
    .unwrap();
    let out = run_agent(&repo, "code-reviewer", "code-reviewer-1", &server);
    let asked = server.requests()[0].messages_text();
    assert!(
        asked.contains("SPEC CHANGED") && asked.contains("+ The greeting must be in French."),
        "{asked}\n{out}"
    );
    let task = crate::common::supervision::task_of(&repo, "t-1");
    assert!(
        task["anomalies"].to_string().contains("spec_changed")
            || crate::common::team::model(&repo)
                .to_string()
                .contains("spec_changed"),
        "{task:#}"
    );
}

#[test]
fn a_dry_run_makes_no_http_call_and_everything_else_runs_for_real() {
    let repo = Repo::initialized();
    add(&repo, "t-1", "");
    let server = ScriptedServer::start(Script { steps: vec![] }).unwrap();
    let out = repo
        .command()
        .env("LIZA_AGENT_ID", "coder-1")
        .env("LIZA_LLM_BASE_URL", server.base_url())
        .env("DRY_RUN", "1")
        .args(["agent", "coder", "t-1", "--cli", "builtin", "--once"])
        .output()
        .unwrap();
    let text = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    assert!(server.requests().is_empty(), "{text}");
    let task = crate::common::supervision::task_of(&repo, "t-1");
    assert_eq!(task["status"], "READY_FOR_REVIEW", "{text}\n{task:#}");
    assert_eq!(task["usage"]["prompt_tokens"], 100);
    assert_eq!(task["usage"]["completion_tokens"], 50);
    assert_eq!(
        repo.git(&["show", "task/t-1:dry-run-t-1.md"]),
        "Dry run of task t-1.\n"
    );
}

#[test]
fn a_failing_optional_check_is_accepted_as_a_trade_off() {
    use liza::blackboard::node::{Entry, Extra, Node, Pos, Value};
    let repo = project(false);
    configure(&repo, |c| {
        c.checks.get_or_insert_with(Vec::new).push(Check {
            name: "style".into(),
            run: CommandSpec::Shell("echo 'greeting.txt: line too short'; exit 1".into()),
            timeout: Some(30),
            on_review: None,
            on_merge: None,
            extra: Extra(vec![Entry {
                key: "optional".into(),
                key_pos: Pos::UNKNOWN,
                value: Node::new(Value::Bool(true)),
            }]),
        });
    });
    let server = ScriptedServer::start(Script {
        steps: vec![Step::answer(edits("hello\n"))],
    })
    .unwrap();
    let text = run_agent(&repo, "coder", "coder-1", &server);
    let task = crate::common::supervision::task_of(&repo, "t-1");
    assert_eq!(task["status"], "READY_FOR_REVIEW", "{text}");
    assert_eq!(
        server.requests().len(),
        1,
        "no redraft for an optional check"
    );
    let model = crate::common::team::model(&repo).to_string();
    assert!(
        model.contains("trade_off") && model.contains("line too short"),
        "{model}"
    );
}

#[test]
fn the_coder_context_holds_the_files_the_task_names_or_quotes() {
    // The files are on main before init, so integration (and the worktree) has them.
    let repo = Repo::new();
    std::fs::create_dir_all(repo.path().join("src")).unwrap();
    std::fs::write(
        repo.path().join("src/report.sh"),
        "print_totals() { echo 42; }\n",
    )
    .unwrap();
    std::fs::write(repo.path().join("src/other.sh"), "unrelated() { :; }\n").unwrap();
    repo.git(&["add", "."]);
    repo.git(&["commit", "-q", "-m", "report"]);
    crate::common::assert_success(&repo.liza(&["init", "Report totals as JSON"]));
    crate::common::assert_success(&repo.liza(&[
        "add-task",
        "--id",
        "t-1",
        "--desc",
        "Make `print_totals` print JSON",
        "--spec",
        "specs/vision.md",
        "--done",
        "print_totals prints {\"total\": 42}",
        "--scope",
        "the report script",
        "--finalize",
    ]));
    let server = ScriptedServer::start(Script {
        steps: vec![Step::answer(edits("x\n"))],
    })
    .unwrap();
    let _ = run_agent(&repo, "coder", "coder-1", &server);
    let asked = server.requests()[0].messages_text();
    assert!(
        asked.contains("### src/report.sh") && asked.contains("print_totals() { echo 42; }"),
        "{asked}"
    );
    assert!(!asked.contains("### src/other.sh"), "{asked}");
    assert!(asked.contains("## Spec (specs/vision.md)"), "{asked}");
}

/// The planner named only `greeting.txt`. A draft that also writes a file outside the
/// task and its tests is refused with the glob that would admit it and the command that
/// widens the task; the next draft (source and test) is committed and submitted: the task
/// is not blocked for the first attempt.
#[test]
fn an_edit_outside_the_task_and_its_tests_is_refused_with_the_way_to_widen_it() {
    let repo = project(false);
    crate::common::team::edit_state(&repo, "test_paths", |state, _| {
        let id = liza::blackboard::TaskId::parse("t-1").unwrap();
        state.task_mut(&id).unwrap().paths = Some(vec!["greeting.txt".into()]);
    });
    let with_test = |extra: Option<(&str, &str)>| {
        let mut list = vec![
            json!({"path": "greeting.txt", "content": "hello\n"}),
            json!({"path": "tests/greeting_test.sh", "content": "grep -q hello greeting.txt\n"}),
        ];
        if let Some((path, content)) = extra {
            list.push(json!({"path": path, "content": content}));
        }
        json!({ "edits": list }).to_string()
    };
    let server = ScriptedServer::start(Script {
        steps: vec![
            Step::answer_when("Your edits were refused", with_test(None)),
            Step::answer_when("# Task t-1", with_test(Some(("docs/notes.md", "notes\n")))),
        ],
    })
    .unwrap();
    let text = run_agent(&repo, "coder", "coder-1", &server);
    assert_eq!(server.requests().len(), 2, "{text}");
    let told = server.requests()[1].messages_text();
    assert!(
        told.contains("`docs/**` would admit docs/notes.md"),
        "{told}"
    );
    assert!(
        told.contains("liza amend-task t-1 --paths greeting.txt,docs/**"),
        "{told}"
    );
    // The first prompt said what the task may change, tests included.
    let first = server.requests()[0].messages_text();
    assert!(
        first.contains("You may change only: greeting.txt, and their tests (tests/**"),
        "{first}"
    );
    let task = crate::common::supervision::task_of(&repo, "t-1");
    assert_eq!(task["status"], "READY_FOR_REVIEW", "{text}\n{task:#}");
    let worktree = repo.path().join(".worktrees/t-1");
    assert!(worktree.join("tests/greeting_test.sh").exists());
    assert!(!worktree.join("docs/notes.md").exists());
}

/// `DRY_RUN=1` is the offline way to try liza's agents on one's own project
/// (specs/builtin-agent.md *DRY_RUN*): a plan of real tasks from the spec's items, each
/// coded inside its own paths, reviewed, merged, and the goal completed — no model, no
/// alarm, nothing written outside the tasks' paths.
#[test]
fn a_dry_run_sprint_plans_codes_reviews_and_merges_within_the_tasks_paths() {
    use crate::common::supervision::AgentProject;
    let project = AgentProject::new();
    let repo = &project.repo;
    std::fs::write(
        repo.path().join("specs/vision.md"),
        "# Vision\n\n- `report --json` prints JSON\n- `report --csv` prints CSV\n",
    )
    .unwrap();
    repo.git(&["commit", "-qam", "the spec's items"]);
    repo.git(&["fetch", "-q", ".", "HEAD:integration"]);
    configure(repo, |c| c.default_cli = Some("builtin".into()));
    let dry = [("DRY_RUN", "1")];
    let team = vec![
        project.supervisor_env("planner", "planner-1", &dry),
        project.supervisor_env("coder", "coder-1", &dry),
        project.supervisor_env("code-reviewer", "code-reviewer-1", &dry),
    ];
    project.wait_all(team, std::time::Duration::from_secs(120));
    let state = crate::common::team::model(repo);
    assert_eq!(
        state["goal"]["status"],
        "COMPLETED",
        "{}",
        project.diagnostics()
    );
    let tasks = state["tasks"].as_array().unwrap();
    let titles: Vec<&str> = tasks
        .iter()
        .map(|t| t["description"].as_str().unwrap().lines().next().unwrap())
        .collect();
    assert_eq!(
        titles,
        ["`report --json` prints JSON", "`report --csv` prints CSV"]
    );
    for task in tasks {
        assert_eq!(task["status"], "MERGED", "{task:#}");
        assert_eq!(task["paths"], json!(["liza-dry-run/"]), "{task:#}");
    }
    let merged = repo.git(&["diff", "--name-only", "main", "integration"]);
    assert_eq!(
        merged.lines().collect::<Vec<_>>(),
        ["liza-dry-run/dry-run-t-1.md", "liza-dry-run/dry-run-t-2.md"]
    );
    let alerts = std::fs::read_to_string(repo.liza_dir().join("alerts.log")).unwrap_or_default();
    assert!(alerts.is_empty(), "{alerts}");
}
