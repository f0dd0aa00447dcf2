//! `liza-agent` options and duties beyond the plain run: the codex backend's structured
//! run report in each validation mode, `-i` interactive runs, the exit when claims keep
//! failing, and hand edits reconciled by an idle supervisor's file watch. Real supervisor
//! processes drive the fake agent CLI.

use std::time::Duration;

use crate::common::supervision::*;
use crate::common::team::*;
use crate::common::*;
use nix::sys::signal::Signal;

const GUARD: Duration = Duration::from_secs(60);

/// The fake agent registered as the `codex` backend (so liza asks it for a run report),
/// with `config.codex_report: true` and `validation_mode`.
fn codex_project(mode: Option<liza::blackboard::model::ValidationMode>) -> AgentProject {
    let project = AgentProject::new();
    configure(&project.repo, |c| {
        let mut tools = c.agent_tools.clone().unwrap();
        tools.0[0].0 = "codex".into();
        tools.0[0].1.args = Some(vec!["exec".into(), "-".into()]);
        c.agent_tools = Some(tools);
        c.default_cli = Some("codex".into());
        c.codex_report = Some(true);
        c.builtin = mode.map(|m| liza::blackboard::model::BuiltinConfig {
            validation_mode: Some(m),
            ..Default::default()
        });
    });
    add(&project.repo, "t-1", "");
    project
}

fn history_events(project: &AgentProject, task: &str, event: &str) -> Vec<serde_json::Value> {
    task_of(&project.repo, task)["history"]
        .as_array()
        .map(|h| h.iter().filter(|e| e["event"] == event).cloned().collect())
        .unwrap_or_default()
}

const REPORT: &str = r#"{"implementation_summary": "wrote t-1.txt", "commit_message": "t-1: add the file", "step_results": [{"step_id": "1", "status": "completed", "summary": "wrote it", "files": ["t-1.txt"], "commands": []}], "tests_executed": ["sh test.sh"], "tests_recommended": [], "follow_up_items": ["document it"], "notes": ""}"#;

#[test]
fn a_codex_run_report_is_recorded_in_the_task_history() {
    let project = codex_project(None);
    project.step(
        "coder",
        "t-1",
        &format!("work t-1.txt done\nreport '{REPORT}'\nsubmit\n"),
    );
    let coder = project.supervisor("coder", "coder-1");
    project.wait_until("the run report", GUARD, || {
        !history_events(&project, "t-1", "run_report").is_empty()
    });
    let event = &history_events(&project, "t-1", "run_report")[0];
    assert_eq!(event["agent"], "coder-1");
    let expected: serde_json::Value = serde_json::from_str(REPORT).unwrap();
    assert_eq!(event["extra"]["report"], expected);
    assert!(event["extra"].get("validation_errors").is_none(), "{event}");
    assert!(
        project
            .repo
            .log()
            .iter()
            .any(|e| e["action"] == "run_report" && e["detail"] == "wrote t-1.txt")
    );
    // The schema liza handed to the agent is kept with the run's outputs.
    let outputs = project.repo.liza_dir().join("agent-outputs");
    let run_dir = std::fs::read_dir(&outputs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let schema: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.path().join("report-schema.json")).unwrap())
            .unwrap();
    assert_eq!(schema, liza::supervisor::policy::run_report::schema());
    let (code, out) = stop(coder, Signal::SIGTERM);
    assert_eq!(code, Some(143), "{out}");
}

#[test]
fn in_strict_mode_an_unusable_report_fails_the_run() {
    let project = codex_project(Some(liza::blackboard::model::ValidationMode::Strict));
    project.step("coder", "t-1", "work t-1.txt done\nreport 'All done!'\n");
    let coder = project.supervisor("coder", "coder-1");
    project.wait_until("the invalid report logged", GUARD, || {
        project
            .repo
            .log()
            .iter()
            .any(|e| e["action"] == "run_report_invalid")
    });
    let entry = project
        .repo
        .log()
        .into_iter()
        .find(|e| e["action"] == "run_report_invalid")
        .unwrap();
    assert!(
        entry["detail"].as_str().unwrap().contains("not JSON"),
        "{entry}"
    );
    assert!(history_events(&project, "t-1", "run_report").is_empty());
    assert_eq!(task_of(&project.repo, "t-1")["status"], "CLAIMED");
    let (code, out) = stop(coder, Signal::SIGTERM);
    assert_eq!(code, Some(143), "{out}");
    assert!(out.contains("coder-1: the run report is not JSON"), "{out}");
}

#[test]
fn in_lenient_mode_the_valid_parts_are_kept_with_the_errors() {
    let project = codex_project(Some(liza::blackboard::model::ValidationMode::Lenient));
    project.step(
        "coder",
        "t-1",
        "work t-1.txt done\nreport '{\"implementation_summary\": \"half of it\", \"notes\": 3}'\nsubmit\n",
    );
    let coder = project.supervisor("coder", "coder-1");
    project.wait_until("the run report", GUARD, || {
        !history_events(&project, "t-1", "run_report").is_empty()
    });
    let event = &history_events(&project, "t-1", "run_report")[0];
    assert_eq!(
        event["extra"]["report"]["implementation_summary"],
        "half of it"
    );
    assert_eq!(event["extra"]["report"]["notes"], "");
    assert_eq!(
        event["extra"]["report"]["step_results"],
        serde_json::json!([])
    );
    let errors = event["extra"]["validation_errors"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .any(|e| e.as_str().unwrap().contains("`notes` is an integer")
                || e.as_str().unwrap().contains("`notes` is a number")),
        "{errors:?}"
    );
    assert_eq!(task_of(&project.repo, "t-1")["status"], "READY_FOR_REVIEW");
    let (code, out) = stop(coder, Signal::SIGTERM);
    assert_eq!(code, Some(143), "{out}");
}

#[test]
fn interactive_mode_hands_the_terminal_to_the_agent_and_prints_the_prompt_path() {
    let project = AgentProject::new();
    add(&project.repo, "t-1", "");
    // The agent records what reached its stdin: nothing, in interactive mode.
    project.step(
        "coder",
        "t-1",
        "printf '%s' \"$prompt\" > \"$FAKE_AGENT_DIR/stdin.txt\"\necho agent says hello\n\
         work t-1.txt done\nsubmit\n",
    );
    let out = project.agent_command(&[("LIZA_AGENT_ID", "coder-1")], &["coder", "-i", "--once"]);
    assert_success(&out);
    let printed = format!("{}{}", stdout(&out), stderr(&out));
    let path = printed
        .lines()
        .find_map(|l| {
            l.split_once("prompt saved to ")
                .map(|(_, p)| p.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no prompt path in:\n{printed}"));
    let prompt = std::fs::read_to_string(&path).unwrap();
    assert!(prompt.contains("t-1"), "{prompt}");
    assert!(printed.contains("agent says hello"), "{printed}");
    assert_eq!(
        std::fs::read_to_string(project.scenario.path().join("stdin.txt")).unwrap(),
        "",
        "the prompt is not piped in interactive mode"
    );
    assert_eq!(task_of(&project.repo, "t-1")["status"], "READY_FOR_REVIEW");
}

#[test]
fn claims_that_keep_failing_end_the_supervisor_with_exit_6() {
    let project = AgentProject::new();
    add(&project.repo, "t-1", "");
    // A file where the worktrees directory must go: every claim fails in git, not by a
    // refusal of the lifecycle.
    let blocker = project.repo.path().join(".worktrees");
    std::fs::write(&blocker, "not a directory").unwrap();
    let out = project.agent_command(&[("LIZA_AGENT_ID", "coder-1")], &["coder"]);
    assert_exit(&out, 6);
    assert!(stderr(&out).contains("hint:"), "{}", stderr(&out));
    let failures = project
        .repo
        .log()
        .iter()
        .filter(|e| e["action"] == "claim_failed")
        .count();
    assert_eq!(failures, 3);
    assert_eq!(task_of(&project.repo, "t-1")["status"], "UNCLAIMED");
    assert!(
        model(&project.repo)["agents"].get("coder-1").is_none(),
        "the supervisor unregistered"
    );
    assert!(project.runs().is_empty(), "no agent ran");
}

#[test]
fn an_idle_supervisor_reconciles_a_hand_edit_without_any_command() {
    let project = AgentProject::new();
    let coder = project.supervisor("coder", "coder-1");
    project.wait_until("coder-1 registered", GUARD, || {
        model(&project.repo)["agents"].get("coder-1").is_some()
    });
    let revision = project.repo.revision();
    // A valid edit: applied as a human_edit by the watcher.
    let edited = project
        .repo
        .state_text()
        .replace("Add a --json flag", "Add a --json flag, edited");
    std::fs::write(project.repo.state_path(), &edited).unwrap();
    project.wait_until("the edit applied", GUARD, || {
        project.repo.revision() > revision
    });
    let log = project.repo.log();
    assert!(log.iter().any(|e| e["action"] == "human_edit"), "{log:?}");
    // A broken save: set aside and the last good revision put back, by the watcher.
    let good = project.repo.state_text();
    std::fs::write(project.repo.state_path(), "goal: [broken\n").unwrap();
    project.wait_until("the broken save set aside", GUARD, || {
        project.repo.liza_dir().join("rejected").is_dir() && project.repo.state_text() == good
    });
    let (code, out) = stop(coder, Signal::SIGTERM);
    assert_eq!(code, Some(143), "{out}");
}
