//! What the agents cost, with real supervisors running the fake CLIs of
//! tests/fake-clis/ (each reporting usage as its real CLI does): budgets block a task and
//! pause a sprint, a raised budget resumes; a supervisor with a fallback runs it while its
//! own backend is limited and returns when the limit resets; `liza status`, `liza cost`,
//! `liza show` and `/metrics` say what was used (specs/ledger.md).

use std::path::PathBuf;
use std::time::Duration;

use crate::common::supervision::*;
use crate::common::team::*;
use crate::common::*;

const GUARD: Duration = Duration::from_secs(90);

fn fakes() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake-clis")
}

/// The user's environment for the fake CLIs: on PATH, with their keys.
fn cli_env() -> Vec<(&'static str, String)> {
    vec![
        (
            "PATH",
            format!("{}:{}", fakes().display(), std::env::var("PATH").unwrap()),
        ),
        ("ANTHROPIC_API_KEY", "sk-ant-test-0123456789".into()),
        ("CODEX_API_KEY", "sk-test-0123456789".into()),
    ]
}

/// A project whose one task t-1 its coder runs through `cli` (a fake of the real CLI).
fn project_with(cli: &str) -> AgentProject {
    let project = AgentProject::new();
    add(&project.repo, "t-1", "");
    let cli = cli.to_owned();
    configure(&project.repo, move |c| c.default_cli = Some(cli.clone()));
    project
}

fn supervisor(project: &AgentProject, role: &str, id: &str) -> Supervisor {
    let env = cli_env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    project.supervisor_env(role, id, &env)
}

fn cost(project: &AgentProject, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json", "cost"];
    all.extend_from_slice(args);
    json(&project.repo.liza(&all))["result"].clone()
}

fn alarms(project: &AgentProject) -> String {
    std::fs::read_to_string(project.repo.liza_dir().join("alerts.log")).unwrap_or_default()
}

/// specs/ledger.md *Budgets*: the task's first run (claude: 4,182 tokens, the title call
/// included) crosses a 4,000-token task budget; the next run is not started — the task is
/// BLOCKED with the figures, nobody blamed. Raising the budget and unblocking it resumes
/// the work, which then merges.
#[test]
fn a_task_crossing_its_budget_is_blocked_and_a_raised_budget_resumes_it() {
    let project = project_with("claude");
    configure(&project.repo, |c| {
        c.budget = Some(liza::blackboard::model::BudgetConfig {
            task: Some(liza::blackboard::model::BudgetLimit {
                tokens: Some(4000),
                ..Default::default()
            }),
            ..Default::default()
        });
    });
    // Run 1 works without submitting (a restart follows); run 2 would submit.
    project.step("coder", "t-1.1", "work t-1.txt draft\n");
    project.step("coder", "t-1", "work t-1.txt done\nsubmit\n");
    project.step("code-reviewer", "default", "approve\n");
    let coder = supervisor(&project, "coder", "coder-1");
    project.wait_until("t-1 blocked over its budget", GUARD, || {
        status(&project.repo, "t-1") == "BLOCKED"
    });
    let task = task_of(&project.repo, "t-1");
    let reason = task["blocked_reason"].as_str().unwrap();
    assert_eq!(
        reason, "Budget exceeded: t-1 used 4,182 tokens of its 4,000 token budget",
        "{task}"
    );
    assert!(
        task["failed_by"].as_array().is_none_or(|f| f.is_empty()),
        "nobody is blamed: {task}"
    );
    assert_eq!(project.runs().len(), 1, "the second run never started");
    // `liza show` says what the task used, the ledger's figures.
    let shown = json(&project.repo.liza(&["--json", "show", "t-1"]))["result"]["usage"].clone();
    assert_eq!(shown["input_tokens"], 2468, "{shown}");
    assert_eq!(shown["runs"], 1, "{shown}");
    // A person raises the budget and unblocks the task: the work goes on to MERGED.
    configure(&project.repo, |c| {
        c.budget.as_mut().unwrap().task.as_mut().unwrap().tokens = Some(1_000_000);
    });
    assert_success(
        &project
            .repo
            .liza(&["unblock", "t-1", "--reason", "budget raised"]),
    );
    let reviewer = supervisor(&project, "code-reviewer", "code-reviewer-1");
    project.wait_until("t-1 merged", GUARD, || {
        status(&project.repo, "t-1") == "MERGED"
    });
    // The reviewer's run is recorded as it ends, after its verdict.
    project.wait_until("three runs in the ledger", GUARD, || {
        cost(&project, &[])["total"]["runs"] == 3
    });
    drop((coder, reviewer));
    let by_task = cost(&project, &["--by", "task"]);
    assert_eq!(by_task["groups"][0]["task"], "t-1", "{by_task}");
    assert_eq!(by_task["groups"][0]["runs"], 3, "{by_task}");
}

/// specs/ledger.md *Budgets*: with a sprint budget of one token, the first run spends it:
/// the coder starts no other run, says it waits for the budget (`liza status`), and one
/// BUDGET_EXCEEDED alarm is raised; raising the budget resumes the runs at once.
#[test]
fn a_sprint_over_its_budget_pauses_new_runs_until_the_budget_is_raised() {
    let project = project_with("claude");
    configure(&project.repo, |c| {
        c.budget = Some(liza::blackboard::model::BudgetConfig {
            sprint: Some(liza::blackboard::model::BudgetLimit {
                tokens: Some(1),
                ..Default::default()
            }),
            ..Default::default()
        });
    });
    project.step("coder", "t-1.1", "work t-1.txt draft\n");
    project.step("coder", "t-1", "work t-1.txt done\nsubmit\n");
    let coder = supervisor(&project, "coder", "coder-1");
    project.wait_until("coder-1 waiting for the budget", GUARD, || {
        waiting_of(&project.repo, "coder-1").as_deref() == Some("budget")
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(project.runs().len(), 1, "no run while the budget is spent");
    let raised = alarms(&project);
    assert_eq!(
        raised.matches("BUDGET_EXCEEDED").count(),
        1,
        "one alarm:\n{raised}"
    );
    let human = project.repo.liza(&["status"]);
    let human = String::from_utf8_lossy(&human.stdout);
    assert!(human.contains("budget"), "{human}");
    assert!(human.contains("Usage, sprint"), "{human}");
    configure(&project.repo, |c| {
        c.budget.as_mut().unwrap().sprint.as_mut().unwrap().tokens = Some(1_000_000);
    });
    project.wait_until("t-1 submitted after the raise", GUARD, || {
        status(&project.repo, "t-1") == "READY_FOR_REVIEW"
    });
    assert_eq!(project.runs().len(), 2);
    drop(coder);
}

/// specs/ledger.md *Fallbacks*: claude is limited (`retry in 5s`, held a minute at least);
/// the same supervisor runs its fallback (codex) for the next run, then returns to claude
/// once the reset has passed — here by moving the recorded reset into the past while the
/// fallback runs, as a minute passing would. The ledger names each run's backend; status
/// showed the fallback in use.
#[test]
fn a_supervisor_runs_its_fallback_while_its_backend_is_limited_and_returns_after() {
    let project = project_with("claude");
    configure(&project.repo, |c| {
        let tools = c.agent_tools.get_or_insert_with(Default::default);
        tools.0.push((
            "claude".to_owned(),
            liza::blackboard::model::AgentTool {
                fallback: Some(vec!["codex".into()]),
                ..Default::default()
            },
        ));
    });
    let marker = project.scenario.path().join("fallback-ran");
    project.step(
        "coder",
        "t-1.1",
        "work t-1.txt draft\necho \"You've hit your usage limit · retry in 5s\"\nexit 1\n",
    );
    project.step(
        "coder",
        "t-1.2",
        &format!(
            "work t-1.txt better\ntouch '{}'\nsleep 6\n",
            marker.display()
        ),
    );
    project.step("coder", "t-1", "work t-1.txt done\nsubmit\n");
    let coder = supervisor(&project, "coder", "coder-1");
    project.wait_until("the fallback's run", GUARD, || marker.exists());
    let live =
        json(&project.repo.liza(&["--json", "status"]))["result"]["agents"][0]["cli"].clone();
    assert_eq!(live, "codex, for claude", "status says who runs on what");
    // The limit was recorded, bounded to a minute at least; the minute passes.
    let quota_file = project.repo.liza_dir().join("quota.json");
    let mut hits: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(&quota_file).unwrap()).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["backend"], "claude");
    let at =
        |field: &str| liza::blackboard::Timestamp::parse(hits[0][field].as_str().unwrap()).unwrap();
    assert!(
        at("resets_at").seconds_since(at("seen_at")) >= 60,
        "held a minute at least: {hits:?}"
    );
    let passed = liza::blackboard::Timestamp::now().plus_seconds(-1);
    hits[0]["resets_at"] = passed.to_string().into();
    std::fs::write(&quota_file, serde_json::to_vec(&hits).unwrap()).unwrap();
    let ledger_file = project.repo.liza_dir().join("ledger.jsonl");
    let entries = || {
        std::fs::read_to_string(&ledger_file)
            .unwrap_or_default()
            .lines()
            .count()
    };
    project.wait_until("three runs in the ledger", GUARD, || entries() == 3);
    assert_eq!(status(&project.repo, "t-1"), "READY_FOR_REVIEW");
    drop(coder);
    let ledger = std::fs::read_to_string(&ledger_file).unwrap();
    let backends: Vec<String> = ledger
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["backend"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(backends, ["claude", "codex", "claude"], "{ledger}");
    let by_backend = cost(&project, &["--by", "backend"]);
    let groups = by_backend["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{by_backend}");
    // The limit is recorded for every supervisor of claude on this key.
    let quota: serde_json::Value =
        serde_json::from_slice(&std::fs::read(project.repo.liza_dir().join("quota.json")).unwrap())
            .unwrap_or_default();
    assert!(
        quota
            .as_array()
            .is_none_or(|q| q.iter().all(|h| h["backend"] == "claude")),
        "{quota}"
    );
}
